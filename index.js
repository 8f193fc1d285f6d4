'use strict'
// @norskvideo/ctl-migration: a native drop-in for @norskvideo/ctl-sdk/migration.
module.exports = require('./lib/client.js')
