import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import {
  callbackUrlProblem,
  darajaTimestamp,
  normaliseKenyanPhone,
  publicBaseUrlProblem,
  stkCallbackUrl,
  stkPassword,
} from './mpesa.ts';

describe('M-Pesa payer input and Daraja fields', () => {
  it('reads a Kenyan mobile number however the payer types it', () => {
    for (const typed of [
      '0712345678',
      '0712 345 678',
      '712345678',
      '+254712345678',
      '254 712-345-678',
      '(0712) 345678',
    ]) {
      expect(normaliseKenyanPhone(typed), typed).toBe('254712345678');
    }
    // Safaricom's 011x numbers too.
    expect(normaliseKenyanPhone('0110 123 456')).toBe('254110123456');
  });

  it('refuses what is not a Kenyan mobile number', () => {
    for (const typed of [
      '',
      '07123',
      '071234567890',
      '+255712345678',
      '0212345678',
      'abc',
      '0712a45678',
      '2547123456789',
    ]) {
      expect(normaliseKenyanPhone(typed), typed).toBeUndefined();
    }
  });

  it('stamps in East Africa Time and builds the password from shortcode, passkey and timestamp', () => {
    expect(darajaTimestamp(new Date('2026-11-23T21:30:05.123Z'))).toBe('20261124003005');
    expect(Buffer.from(stkPassword('174379', 'pk', '20261124003005'), 'base64').toString()).toBe(
      '174379pk20261124003005',
    );
  });
});

describe("the STK callback URL, by Safaricom's URL rules", () => {
  it('refuses the words Safaricom tells integrators to keep out of URLs, in any case and their variants', () => {
    for (const url of [
      'https://pay.example.com/hooks/mpesa/1',
      'https://pay.example.com/hooks/M-PESA/1',
      'https://pay.example.com/hooks/M-Pesa/1',
      'https://pay.example.com/m_pesa',
      'https://mpesa.example.com/hooks',
      'https://pay.example.com/Safaricom/1',
      'https://pay.example.com/run.EXE',
      'https://pay.example.com/exec/1',
      'https://pay.example.com/cmd',
      'https://pay.example.com/SQL',
      'https://pay.example.com/?query=1',
    ]) {
      for (const environment of ['sandbox', 'production'] as const) {
        expect(callbackUrlProblem(url, environment), url).toMatch(/a word Safaricom tells integrators to keep out/);
      }
    }
  });

  it('takes plain http and a private host on the sandbox only, and never a public URL tester on production', () => {
    expect(callbackUrlProblem('http://127.0.0.1:3000/hooks/stk/ab', 'sandbox')).toBeUndefined();
    expect(callbackUrlProblem('https://pay.example.com/hooks/stk/ab', 'production')).toBeUndefined();
    expect(callbackUrlProblem('http://pay.example.com/hooks/stk/ab', 'production')).toMatch(/not HTTPS/);
    for (const host of ['127.0.0.1', '10.1.2.3', '192.168.0.4', 'localhost', 'payments.internal', 'intranet']) {
      expect(callbackUrlProblem(`https://${host}/hooks/stk/ab`, 'production'), host).toMatch(/not a public address/);
    }
    for (const host of ['abc.ngrok-free.app', 'x.ngrok.io', 'mockbin.org', 'requestb.in']) {
      expect(callbackUrlProblem(`https://${host}/hooks/stk/ab`, 'production'), host).toMatch(/public URL tester/);
    }
  });

  it('builds callback URLs that never spell a refused word, whatever the secret', () => {
    for (let i = 0; i < 2000; i++) {
      const url = stkCallbackUrl('https://pay.example.com', randomBytes(32).toString('hex'));
      expect(callbackUrlProblem(url, 'production'), url).toBeUndefined();
    }
  });

  it('names PUBLIC_BASE_URL when the callbacks built on it would be refused', () => {
    expect(publicBaseUrlProblem('http://localhost:3000', 'production')).toBe(
      "PUBLIC_BASE_URL (http://localhost:3000): M-Pesa's callback URL is not HTTPS: Daraja production calls back only on HTTPS",
    );
    expect(publicBaseUrlProblem('http://localhost:3000', 'sandbox')).toBeUndefined();
    expect(publicBaseUrlProblem('https://pay.mpesa-shop.example', 'sandbox')).toMatch(/contains "mpesa"/);
    expect(publicBaseUrlProblem('https://pay.example.com', 'production')).toBeUndefined();
  });
});
