// Recipe: jest, CommonJS (`npx jest`). A product's handlers against the testing kit's worker.
const { connectMigration } = require('@norskvideo/ctl-migration')
const { startTestWorker } = require('@norskvideo/ctl-migration-testing')

let worker
let product

beforeEach(async () => {
  worker = await startTestWorker({ strict: true }) // any rule the product breaks fails the test
})

afterEach(async () => {
  jest.useRealTimers()
  product?.close()
  await worker.close()
})

test('comes back after the worker closes its connection with 1011', async () => {
  // The product under test, quick to reconnect: it answers a propose with its position.
  product = connectMigration({ onGetState: () => ({ position: 42 }) }, worker.env(), { log: () => {}, reconnectMinMs: 20 })
  await worker.waitForConnection()
  worker.reset() // forget the first connection's records
  await worker.closeConnection(1011, 'worker error')
  await worker.waitForConnection() // the product reconnected by itself
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
})

test("the kit's timeouts keep real time under fake timers", async () => {
  jest.useFakeTimers()
  await expect(worker.waitForFrame('state', { timeoutMs: 200 })).rejects.toThrow("no 'state' frame within 200 ms")
})
