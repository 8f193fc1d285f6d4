'use strict'
// `@norskvideo/ctl-migration/internal/addon`: what the testing package
// (@norskvideo/ctl-migration-testing, which depends on this package at its own version) takes of
// the client's loading rules, so that each rule is written once: which binary a process needs,
// how a load failed, load once, and finding an installed copy from a bundle; how a payload
// becomes JSON and anything thrown becomes text; and how a recording names a field. Not an API for products: it changes with any
// release.

const { hostPlatform, runtimeName, failedLoads, once } = require('./platform.js')
const { installedRequire } = require('./own-require.js')
const { describe, payloadJson } = require('../client/values.js')
const { pathStep, pathKeys } = require('../client/json-path.js')

module.exports = { hostPlatform, runtimeName, failedLoads, once, installedRequire, describe, payloadJson, pathStep, pathKeys }
