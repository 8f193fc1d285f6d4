import { HandoverError, runHandover, startTestWorker } from '@norskvideo/ctl-migration-testing'
// CommonJS: const { HandoverError, runHandover, startTestWorker } = require('@norskvideo/ctl-migration-testing')
