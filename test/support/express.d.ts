// express 5 ships no types, and @types/express is not a dependency: only the x402 middleware test
// (test/x402.middleware.test.ts) runs express, to host a merchant's route behind @x402/express, and
// it needs only this much of it.
declare module 'express' {
  import type { Server } from 'node:http';

  export interface Request {
    readonly path: string;
  }
  export interface Response {
    json(body: unknown): void;
  }
  export type NextFunction = (error?: unknown) => void;
  export interface Express {
    use(handler: (req: Request, res: Response, next: NextFunction) => unknown): void;
    get(path: string, handler: (req: Request, res: Response) => void): void;
    listen(port: number, host: string): Server;
  }
  export default function express(): Express;
}
