// Test helpers: a real kurad per test file (port 0, temp data dir), the kura
// CLI built the same way, and a small HTTP proxy to break connections on
// purpose.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import http from "node:http";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(fileURLToPath(new URL("../../../", import.meta.url)));

let buildDir;
function buildBin(env, pkg, name) {
  if (process.env[env]) return process.env[env];
  buildDir ??= mkdtempSync(join(tmpdir(), "kura-ts-bin-"));
  const out = join(buildDir, name);
  if (!existsSync(out)) execFileSync("go", ["build", "-o", out, pkg], { cwd: repoRoot, stdio: "inherit" });
  return out;
}

export const kuradBin = () => buildBin("KURAD_BIN", "./cmd/kurad", "kurad");
export const kuraBin = () => buildBin("KURA_BIN", "./cmd/kura", "kura");

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts kurad; returns { url, dir, stop }. opts.tokens: lines of a tokens file. */
export async function startKurad(opts = {}) {
  const dir = mkdtempSync(join(tmpdir(), "kura-ts-"));
  const args = ["--data-dir", dir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", "--log-level", "warn"];
  if (opts.tokens) {
    const f = join(dir, "tokens");
    writeFileSync(f, opts.tokens.join("\n") + "\n", { mode: 0o600 });
    args.push("--tokens-file", f);
  }
  let stderr = "";
  const child = spawn(kuradBin(), args, { stdio: ["ignore", "ignore", "pipe"] });
  child.stderr.on("data", (b) => (stderr += b));
  const exited = new Promise((r) => child.on("exit", r));
  const deadline = Date.now() + 20_000;
  let url;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`kurad exited ${child.exitCode}: ${stderr}`);
    const f = join(dir, "kurad.addr");
    if (!url && existsSync(f)) {
      try {
        url = "http://" + JSON.parse(readFileSync(f, "utf8")).http;
      } catch { /* written as we read: look again */ }
    }
    if (url) {
      try {
        const r = await fetch(url + "/readyz");
        if (r.status === 200) break;
      } catch { /* not listening yet */ }
    }
    await delay(50);
  }
  if (!url) throw new Error(`kurad did not come up in 20 s: ${stderr}`);
  return {
    url,
    dir,
    async stop() {
      child.kill("SIGTERM");
      let t;
      await Promise.race([exited, new Promise((r) => (t = setTimeout(r, 10_000)))]);
      clearTimeout(t);
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An HTTP proxy in front of target. hooks.onResponse(req, upstreamRes, n)
 * may return "drop" to destroy the client connection after the request
 * was forwarded (the answer is lost), or "cut-stream" to pass a stream on and
 * cut it after its first event frame. Records every request it saw.
 */
export async function startProxy(target, hooks = {}) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const n = seen.length;
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const u = new URL(target);
      const up = http.request({ host: u.hostname, port: u.port, method: req.method, path: req.url, headers: { ...req.headers, host: u.host } }, (ures) => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, status: ures.statusCode, resHeaders: ures.headers });
        const act = hooks.onResponse?.(req, ures, n);
        if (act === "unavailable") {
          ures.resume();
          res.writeHead(503, { "content-type": "application/json", "retry-after": "0" });
          res.end(JSON.stringify({ error: { code: "unavailable", message: "proxy says not now" } }));
          return;
        }
        if (act === "drop") {
          ures.resume();
          ures.on("end", () => req.socket.destroy());
          return;
        }
        res.writeHead(ures.statusCode, ures.headers);
        if (act === "cut-stream") {
          // Pass on exactly the first event frame, then cut the connection.
          let acc = "";
          ures.on("data", (c) => {
            acc += c;
            const id = acc.indexOf("id: ");
            const end = id < 0 ? -1 : acc.indexOf("\n\n", id);
            if (end < 0) return;
            ures.destroy();
            res.write(acc.slice(0, end + 2), () => req.socket.destroy());
          });
          return;
        }
        ures.pipe(res);
      });
      up.on("error", () => req.socket.destroy());
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  };
}
