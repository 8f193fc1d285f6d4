// Types of the testing kit's ESM entry: the same API as the CommonJS one.
export * from './testing.js'
