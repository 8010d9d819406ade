// `@notify/cli/local`: running Notify on this machine, for `npm start` and the end-to-end suites.
export { ensureInfrastructure, stopLocalInfrastructure, type InfrastructureOptions, type InfrastructureReport, type Reporter } from './infrastructure.ts';
export { probeNats, probePostgres, probeRedis, type Endpoint, type ProbeResult } from './probes.ts';
export { databaseUrl, dropDatabase, ensureDatabase } from './database.ts';
export { nodeCompileCache, startStack, type ServiceName, type Stack, type StackEnvironment, type StackLogs, type StackOptions, type StackPortOptions, type StackPorts } from './stack.ts';
export type { ExitInfo } from './service-process.ts';
export type { LogLine, OutputTarget } from './prefixed-output.ts';
export { startSmtpSink, type SinkEnvelope, type SinkReply, type SmtpSink, type SmtpSinkOptions } from './smtp-sink.ts';
export { demo, seedDemo, type DemoTenant, type SeedOptions } from './seed.ts';
export { launch, type LaunchOptions, type Launched } from './launch.ts';
export { curlCommand, demoSendRequest, type HttpRequest } from './instructions.ts';
