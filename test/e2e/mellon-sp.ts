/**
 * A real SAML service provider for the tests: Debian's Apache httpd with mod_auth_mellon, started
 * on a loopback port as an unprivileged process (`nobody` when the tests run as root) from a
 * generated config in a temp dir (its own ServerRoot, PidFile, ErrorLog, runtime dir), the
 * modules loaded from /usr/lib/apache2/modules. `/protected/` is a CGI behind mellon that prints
 * the MELLON_ variables mellon sets from the assertion, one `NAME=value` per line.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

const APACHE = '/usr/sbin/apache2';
const MODULES = '/usr/lib/apache2/modules';

/** A mellon SP prepared on a port: its entity ID and metadata, to register at the IdP before it starts. */
export interface MellonSp {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  entityId: string;
  metadataXml: string;
  /** The protected page (a CGI printing MELLON_* variables). */
  protectedUrl: string;
  /** Starts Apache with the IdP's metadata. */
  start(idpMetadataXml: string): Promise<void>;
  /** Apache's error log so far (mellon's reasons for a refusal are there). */
  errorLog(): string;
  stop(): Promise<void>;
}

/** Prepares an SP on a free port: key, certificate, metadata, the CGI; Apache is not started yet. */
export async function prepareMellon(): Promise<MellonSp> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sigil-mellon-'));
  const origin = `http://127.0.0.1:${port}`;
  const entityId = `${origin}/mellon/metadata`;
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=mellon test sp',
      '-keyout',
      join(dir, 'sp.key'),
      '-out',
      join(dir, 'sp.crt'),
    ],
    { stdio: 'pipe' },
  );
  const cert = readFileSync(join(dir, 'sp.crt'), 'utf8').replace(/-----[^-]+-----|\s+/g, '');
  const metadataXml = spMetadata(origin, entityId, cert);
  writeFileSync(join(dir, 'sp-metadata.xml'), metadataXml);
  mkdirSync(join(dir, 'cgi'));
  writeFileSync(
    join(dir, 'cgi', 'echo'),
    '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nenv | grep "^MELLON_" | sort\n',
  );
  chmodSync(join(dir, 'cgi', 'echo'), 0o755);
  writeFileSync(join(dir, 'httpd.conf'), apacheConfig(dir, port, entityId));
  let child: ChildProcess | undefined;
  return {
    origin,
    entityId,
    metadataXml,
    protectedUrl: `${origin}/protected/echo`,
    async start(idpMetadataXml: string) {
      writeFileSync(join(dir, 'idp-metadata.xml'), idpMetadataXml);
      // Unprivileged: as root (CI), Apache runs as nobody, who must own its files.
      const asRoot = process.getuid?.() === 0;
      if (asRoot)
        for (const f of [
          '',
          'sp.key',
          'sp.crt',
          'sp-metadata.xml',
          'idp-metadata.xml',
          'cgi',
          'cgi/echo',
          'httpd.conf',
        ])
          chownSync(join(dir, f), 65534, 65534);
      child = spawn(APACHE, ['-f', join(dir, 'httpd.conf'), '-DFOREGROUND'], {
        detached: true,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { PATH: '/usr/sbin:/usr/bin:/bin', LANG: 'C' },
        ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
      });
      let stderr = '';
      child.stderr?.on('data', (d) => {
        stderr += String(d);
      });
      await waitForPort(port, () =>
        child?.exitCode !== null ? `apache2 exited: ${stderr}${safeRead(join(dir, 'error.log'))}` : undefined,
      );
    },
    errorLog: () => safeRead(join(dir, 'error.log')),
    async stop() {
      if (child?.pid !== undefined && child.exitCode === null) {
        const exited = new Promise((ok) => child?.once('exit', ok));
        process.kill(-child.pid, 'SIGTERM');
        await Promise.race([exited, new Promise((ok) => setTimeout(ok, 5000))]);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Resolves once `port` accepts connections; fails when `failed` says why, or after 15 s. */
async function waitForPort(port: number, failed: () => string | undefined): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const why = failed();
    if (why) throw new Error(why);
    const open = await new Promise<boolean>((ok) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        ok(true);
      });
      socket.once('error', () => ok(false));
    });
    if (open) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`apache2 did not listen on ${port}`);
}

/**
 * The SP's metadata: signed requests, signed assertions wanted, its key for encryption too
 * (MellonSPPrivateKeyFile decrypts), the ACS and the SLO of mellon's endpoint in the HTTP-Redirect
 * and SOAP bindings (as mellon's own generated metadata lists them).
 */
function spMetadata(origin: string, entityId: string, cert: string): string {
  return `<?xml version="1.0"?>
<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <SPSSODescriptor AuthnRequestsSigned="true" WantAssertionsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>
    <KeyDescriptor use="encryption"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${origin}/mellon/logout"/>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${origin}/mellon/logout"/>
    <NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</NameIDFormat>
    <AssertionConsumerService index="0" isDefault="true" Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${origin}/mellon/postResponse"/>
  </SPSSODescriptor>
</EntityDescriptor>
`;
}

/** httpd.conf: prefork (CGI without cgid), mellon on `/`, authentication on `/protected`. */
function apacheConfig(dir: string, port: number, entityId: string): string {
  const modules = ['mpm_prefork', 'authz_core', 'authz_user', 'authn_core', 'alias', 'cgi', 'setenvif', 'auth_mellon'];
  return `ServerRoot "${dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile "${dir}/apache.pid"
ErrorLog "${dir}/error.log"
LogLevel warn auth_mellon:info
DefaultRuntimeDir "${dir}"
Mutex file:${dir} default
StartServers 1
MinSpareServers 1
MaxSpareServers 2
MaxRequestWorkers 4
${modules.map((m) => `LoadModule ${m}_module ${MODULES}/mod_${m}.so`).join('\n')}
DocumentRoot "${dir}/cgi"
<Directory />
  Require all denied
</Directory>
# Mellon's cookie test sends SameSite=None, which a browser drops without Secure (plain http here):
# without SameSite the browser's default (Lax) holds, and Sigil and the SP are both on 127.0.0.1,
# one site, so the cookie rides the POST to the ACS.
SetEnvIf Request_URI "." MELLON_DISABLE_SAMESITE=1
<Location />
  MellonEnable "info"
  MellonEndpointPath "/mellon"
  MellonSPentityId "${entityId}"
  MellonSPPrivateKeyFile "${dir}/sp.key"
  MellonSPCertFile "${dir}/sp.crt"
  MellonSPMetadataFile "${dir}/sp-metadata.xml"
  MellonIdPMetadataFile "${dir}/idp-metadata.xml"
  MellonSecureCookie Off
  MellonDefaultLoginPath "/protected/echo"
</Location>
ScriptAlias /protected/ "${dir}/cgi/"
<Directory "${dir}/cgi">
  Options +ExecCGI
  Require all granted
</Directory>
<Location /protected>
  AuthType "Mellon"
  MellonEnable "auth"
  Require valid-user
</Location>
`;
}
