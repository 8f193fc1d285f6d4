// The frames and payloads the bench sends, shared by the worker, the clients and the echo peer.

export const TOKEN = 'bench-token'
export const MIGRATION_ID = 'mig-bench-0001'
/** A cutover-ready for this migration is answered with its own payload (the other with POSITION). */
export const ECHO_ID = 'mig-bench-echo'

/** A cutover position, as a source or target reports it. */
export const POSITION = { streamId: 'program', pts: 1234567890, timebase: 90000, segment: 4711 }

/** What a source hands over on get-state (a small document). */
export const STATE = {
  version: 3,
  position: POSITION,
  outputs: [
    { id: 'hls-main', kind: 'hls', url: 'https://cdn.example/live/main.m3u8' },
    { id: 'srt-backup', kind: 'srt', url: 'srt://backup.example:9000' },
  ],
}

/** The 36 KB payload: 600 small objects. */
export const BIG = Array.from({ length: 600 }, (_, i) => ({
  id: `seg-${String(i).padStart(5, '0')}`,
  pts: 90000 * i + 123456789,
  dur: 1800000,
  key: i % 2 === 0,
}))

export const bigBytes = () => Buffer.byteLength(JSON.stringify(BIG))
