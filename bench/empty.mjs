// Empty: importing it measures Node's ES module loader on its own (bench/run.mjs).
