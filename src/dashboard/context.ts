import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { AnyTool, ToolEnvironment } from '../core/tool.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { ApiKeyCheck } from '../http/plugins/auth.ts';
import type { RateLimiter } from '../rate-limit/rate-limiter.ts';
import type { DashboardAssets } from './assets.ts';
import type { DashboardSession } from './sessions.ts';
import type { PageContext } from './view.ts';

/**
 * What the dashboard uses of the process's services: the tools' environment (held actions are
 * approved through the pipeline, runs read through the agent runtime, the rails say which they
 * offer from the database), the API key check it signs in with, the per-key rate limit and the
 * secret box (webhook secrets). The API host hands in its Runtime, which is one.
 */
export interface DashboardServices extends ToolEnvironment, ApiKeyCheck {
  rateLimiter: RateLimiter;
  secretBox: SecretBox;
}

/** What every screen's routes get from the plugin. */
export interface DashboardDeps {
  services: DashboardServices;
  tools: readonly AnyTool[];
  assets: DashboardAssets;
}

/**
 * Who may reach a dashboard route, in its route config. Default-deny: a route without it needs a
 * signed-in session. `public` routes (sign-in) still see the session if there is one; `asset`
 * routes do not look for one.
 */
export interface DashboardAccess {
  access?: 'session' | 'public' | 'asset';
  /** The session's key needs one of these scopes. */
  scopes?: readonly ApiKeyScope[];
}

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession: DashboardSession | null;
  }
  interface FastifyContextConfig {
    dashboard?: DashboardAccess;
  }
}

/** The signed-in session of a route that requires one (the onRequest hook has checked it). */
export function sessionOf(request: FastifyRequest): DashboardSession {
  if (!request.dashboardSession) throw new AppError('authentication_required', 'Sign in to use the dashboard.');
  return request.dashboardSession;
}

export function pageContext(deps: DashboardDeps, request: FastifyRequest): PageContext {
  return { assets: deps.assets, session: request.dashboardSession };
}

export function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

/** The form body of a POST (the dashboard accepts application/x-www-form-urlencoded only). */
export function formOf(request: FastifyRequest): URLSearchParams {
  return request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
}
