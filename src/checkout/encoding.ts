import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

/**
 * Content-Encoding for the checkout host: a payer on a phone pays for every byte. Brotli when the
 * browser takes it (every current browser does over HTTPS), else gzip, else the bytes as they are.
 * zlib from node, no dependency.
 */
export type ContentCoding = 'br' | 'gzip';

/**
 * The coding to answer with, from an Accept-Encoding header (RFC 9110 12.5.3): brotli over gzip
 * when both are acceptable, nothing for a coding refused with q=0 or not named (a `*` names both).
 */
export function negotiateEncoding(header: string | string[] | undefined): ContentCoding | undefined {
  if (header === undefined) return undefined;
  const weights = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [name = '', ...params] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '') continue;
    const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined);
    weights.set(coding, q === undefined ? 1 : Number(q) || 0);
  }
  const weight = (coding: ContentCoding): number => weights.get(coding) ?? weights.get('*') ?? 0;
  const br = weight('br');
  const gzip = weight('gzip');
  if (br > 0 && br >= gzip) return 'br';
  if (gzip > 0) return 'gzip';
  return undefined;
}

/**
 * Compresses a page rendered for one request. Brotli at quality 5: within a few percent of its
 * best on a 5 KB page, at a fraction of the time quality 11 takes (which is for the static assets,
 * compressed once at start).
 */
export function compressPage(body: string | Buffer, coding: ContentCoding): Buffer {
  return coding === 'br'
    ? brotliCompressSync(body, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 5,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(body),
        },
      })
    : gzipSync(body, { level: 6 });
}

/** A static file's encodings, compressed once with each coding's best setting. */
export function compressStatic(body: Buffer): Record<ContentCoding, Buffer> {
  return {
    br: brotliCompressSync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
    gzip: gzipSync(body, { level: constants.Z_BEST_COMPRESSION }),
  };
}
