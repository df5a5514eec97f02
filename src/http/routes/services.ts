import type { ToolEnvironment } from '../../core/tool.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import type { ApiKeyCheck } from '../plugins/auth.ts';

/**
 * What the API host's own routes use of the process's services, named once: the tools'
 * environment (they run tools and approve held actions through the pipeline), the key check, the
 * secret box (webhook secrets) and which database the readiness check reports. Each route module
 * takes the part it uses; the composition root (http/app.ts) hands in its Runtime, which is one.
 */
export interface ApiServices extends ToolEnvironment, ApiKeyCheck {
  secretBox: SecretBox;
  dbKind: 'postgres' | 'pglite';
}
