// Types of the ESM entry: the same API as the CommonJS one.
export * from '../index.js'
