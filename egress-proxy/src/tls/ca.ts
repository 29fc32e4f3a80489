/**
 * The certificates of TLS interception: one CA per sandbox namespace (EC P-256, 10 years) and
 * short-lived leaf certificates it signs per intercepted host (EC P-256, 7 days, cached), built
 * with node:crypto and the DER writer (der.ts). The CA carries pathLen 0 and a name constraint is
 * not used (clients ignore it inconsistently); its private key never leaves the proxy and the
 * Secret it is kept in.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';

import { bits, bool, explicit, octets, oid, seq, set, time, tlv, uint, utf8 } from './der.js';

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

/** A certificate and its key, in PEM. */
export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

/** A CA able to sign leaves. */
export interface CertificateAuthority extends CertAndKey {
  key: KeyObject;
  name: Buffer;
  keyId: Buffer;
}

const pem = (label: string, der: Buffer): string =>
  `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n?$/, '\n')}-----END ${label}-----\n`;

const commonName = (cn: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer): Buffer =>
  critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));

function spkiOf(key: KeyObject): { spki: Buffer; keyId: Buffer } {
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  // Key identifier: SHA-1 of the subjectPublicKey bits (RFC 5280 4.2.1.2 method 1).
  const pubBits = spki.subarray(spki.length - 65);
  return { spki, keyId: createHash('sha1').update(pubBits).digest() };
}

function signed(tbs: Buffer, issuerKey: KeyObject): Buffer {
  return seq(tbs, ECDSA_SHA256, bits(sign('sha256', tbs, issuerKey)));
}

/** A new CA named `cn`, valid from an hour ago for `days`. */
export function createCA(cn: string, now = new Date(), days = 3650): CertificateAuthority {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { spki, keyId } = spkiOf(privateKey);
  const name = commonName(cn);
  const tbs = seq(
    explicit(0, uint(Buffer.from([2]))),
    uint(randomBytes(16)),
    ECDSA_SHA256,
    name,
    seq(time(new Date(now.getTime() - 3600_000)), time(new Date(now.getTime() + days * 86400_000))),
    name,
    spki,
    explicit(
      3,
      seq(
        ext('2.5.29.19', true, seq(bool(true), uint(Buffer.from([0])))), // basicConstraints CA, pathLen 0
        ext('2.5.29.15', true, tlv(0x03, Buffer.from([0x01, 0x06]))), // keyUsage keyCertSign, cRLSign
        ext('2.5.29.14', false, octets(keyId)), // subjectKeyIdentifier
      ),
    ),
  );
  const der = signed(tbs, privateKey);
  return {
    certPem: pem('CERTIFICATE', der),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    key: privateKey,
    name,
    keyId,
  };
}

/** The CA from its PEM certificate and key (as kept in its Secret). */
export function loadCA(certPem: string, keyPem: string): CertificateAuthority {
  const key = createPrivateKey(keyPem);
  const der = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  // Our CAs are named by one CN: the issuer name of their leaves is rebuilt from it.
  const cn = /CN=([^\n,]+)/.exec(new X509Certificate(der).subject)?.[1] ?? 'sandbox egress CA';
  return { certPem, keyPem, key, name: commonName(cn), keyId: spkiOf(key).keyId };
}

/** A leaf for `host` signed by `ca`, valid from an hour ago for `days`. */
export function issueLeaf(ca: CertificateAuthority, host: string, now = new Date(), days = 7): CertAndKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { spki, keyId } = spkiOf(privateKey);
  const san = seq(tlv(0x82, Buffer.from(host, 'ascii'))); // dNSName
  const tbs = seq(
    explicit(0, uint(Buffer.from([2]))),
    uint(randomBytes(16)),
    ECDSA_SHA256,
    ca.name,
    seq(time(new Date(now.getTime() - 3600_000)), time(new Date(now.getTime() + days * 86400_000))),
    commonName(host.slice(0, 64)),
    spki,
    explicit(
      3,
      seq(
        ext('2.5.29.19', true, seq()), // basicConstraints: not a CA
        ext('2.5.29.15', true, tlv(0x03, Buffer.from([0x07, 0x80]))), // keyUsage digitalSignature
        ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage serverAuth
        ext('2.5.29.17', false, san),
        ext('2.5.29.14', false, octets(keyId)),
        ext('2.5.29.35', false, seq(tlv(0x80, ca.keyId))), // authorityKeyIdentifier keyIdentifier
      ),
    ),
  );
  return {
    certPem: pem('CERTIFICATE', signed(tbs, ca.key)),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
