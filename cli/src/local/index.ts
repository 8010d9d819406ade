// `@notify/cli/local`: running Notify on this machine, for `npm start` and the end-to-end suites.

export { databaseUrl, dropDatabase, ensureDatabase } from './database.ts';
export { ensureInfrastructure, type InfrastructureOptions, type InfrastructureReport, type Reporter, stopLocalInfrastructure } from './infrastructure.ts';
export { curlCommand, demoSendRequest, type HttpRequest } from './instructions.ts';
export { type Launched, type LaunchOptions, launch } from './launch.ts';
export type { LogLine, OutputTarget } from './prefixed-output.ts';
export { type Endpoint, type ProbeResult, probeNats, probePostgres, probeRedis } from './probes.ts';
export { type DemoTenant, demo, type SeedOptions, seedDemo } from './seed.ts';
export type { ExitInfo } from './service-process.ts';
export { type SinkEnvelope, type SinkReply, type SmtpSink, type SmtpSinkOptions, startSmtpSink } from './smtp-sink.ts';
export {
  nodeCompileCache,
  type ServiceName,
  type Stack,
  type StackEnvironment,
  type StackLogs,
  type StackOptions,
  type StackPortOptions,
  type StackPorts,
  startStack,
} from './stack.ts';
