// @ts-check
// docs/observability.md: how a product turns on opentelemetry-example.mjs.
// #region usage
import { trace } from '@opentelemetry/api'
import { traceHandovers } from './opentelemetry-example.mjs'

const untrace = traceHandovers(trace.getTracer('my-product'))
// #endregion
untrace()
