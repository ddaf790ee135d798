// check.mjs opens the console's views in a headless Firefox, driven over
// WebDriver BiDi by puppeteer-core, for internal/ui's TestConsole_Firefox.
//
// Input (stdin, JSON): {"firefox": path, "base": "http://127.0.0.1:port",
// "ready": js, "shots": a directory for a PNG of each view (optional), "views": [{"name", "route", "ready", "dark", "steps":
// [{"click": css, "until": js}]}]}. Each view gets a fresh tab; it passes
// when "ready" (and the view's own) becomes true, each step's click is
// followed by its "until", and the page raised no error: no uncaught
// exception, no console error (a Content-Security-Policy violation is one),
// no failed request, no request to another origin.
//
// Output: one JSON line per view, {"name", "ok", "ms", "problems": [...],
// "shows": text of <main> when it failed}; exit status 0 when every view
// passed.
import puppeteer from 'puppeteer-core';

const input = JSON.parse(await new Promise((resolve, reject) => {
  let s = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => { s += d; });
  process.stdin.on('end', () => resolve(s));
  process.stdin.on('error', reject);
}));

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: input.firefox,
  headless: true,
  defaultViewport: { width: 1280, height: 900 },
});
const origin = new URL(input.base).origin;
let failed = 0;
try {
  for (const v of input.views) {
    const started = Date.now();
    const problems = [];
    const page = await browser.newPage();
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message || e}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.protocol.startsWith('http') && u.origin !== origin) problems.push(`request to another origin: ${r.url()}`);
    });
    let shows = '';
    try {
      await page.goto(`${input.base}/ui/#${v.route}`, { waitUntil: 'load', timeout: 30000 });
      if (v.dark) await page.evaluate(() => { document.documentElement.dataset.theme = 'dark'; });
      await page.waitForFunction(`(${input.ready}) && (${v.ready})`, { timeout: 30000, polling: 50 });
      for (const s of v.steps || []) {
        await page.click(s.click);
        await page.waitForFunction(s.until, { timeout: 30000, polling: 50 });
      }
      if (input.shots) {
        await page.evaluate(() => window.scrollTo(0, 0));
        await page.screenshot({ path: `${input.shots}/${v.name}.png` });
      }
    } catch (e) {
      problems.push(`${e.name}: ${e.message}`);
      shows = await page.evaluate(() => (document.querySelector('main') || document.body).innerText).catch(() => '');
    }
    await page.close();
    if (problems.length) failed++;
    console.log(JSON.stringify({ name: v.name, ok: problems.length === 0, ms: Date.now() - started, problems, shows }));
  }
  console.log(JSON.stringify({ browser: await browser.version() }));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
