// The two gRPC services the panel reads through (gateway token): PanelAuthService (auth-svc) and PanelService
// (dispatch-svc).
import type { GrpcClient } from '@notify/platform';
import type { auth, dispatch } from '@notify/proto';

export type PanelAuthClient = GrpcClient<auth.PanelAuthServiceDefinition>;
export type PanelQueryClient = GrpcClient<dispatch.PanelServiceDefinition>;
