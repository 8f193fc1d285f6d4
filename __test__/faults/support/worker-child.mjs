// A worker in its own process, so a test can freeze it (SIGSTOP: the kernel keeps ACKing its
// sockets, nothing answers) and thaw it. It acks every hello and reports what it sees over IPC;
// it never echoes a hello's token.
import { WebSocketServer } from 'ws'

const server = new WebSocketServer({ host: '127.0.0.1', port: Number(process.env.FAULTS_WORKER_PORT || 0) })
const send = (msg) => {
  if (process.connected) process.send({ ...msg, at: Date.now() })
}
let count = 0
const sockets = []
server.on('connection', (ws, req) => {
  const n = ++count
  sockets.push(ws)
  send({ ev: 'connection', n, path: req.url })
  ws.on('message', (data) => {
    let frame
    try {
      frame = JSON.parse(String(data))
    } catch {
      send({ ev: 'invalid', n })
      return
    }
    send({ ev: 'frame', n, type: frame.type, payload: frame.type === 'hello' ? undefined : frame.payload })
    if (frame.type === 'hello') ws.send(JSON.stringify({ type: 'hello-ack' }))
  })
  ws.on('ping', () => send({ ev: 'ping', n }))
  ws.on('close', (code) => send({ ev: 'close', n, code }))
  ws.on('error', () => {})
})
server.on('listening', () => send({ ev: 'listening', port: server.address().port }))
process.on('message', (msg) => {
  if (msg.op === 'send') sockets[sockets.length - 1]?.send(JSON.stringify(msg.frame))
})
process.on('disconnect', () => process.exit(0))
