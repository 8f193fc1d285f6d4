'use strict'
// @norskvideo/ctl-migration/testing: a worker simulator and a handover driver for product tests.
module.exports = require('./lib/testing.js')
