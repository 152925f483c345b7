// Drives Debian's headless chromium for tests/web/test_dashboard.py, with
// playwright-core (installed by scripts/setup.sh: `npm ci` in tests/web/; no
// browser download, the system's /usr/bin/chromium is used).
//
// Protocol: one JSON command per line on stdin, one JSON answer per line on
// stdout ({"ok": true, ...} or {"ok": false, "error": "..."}):
//   {"cmd": "open", "url": URL, "fresh": BOOL}       load a page (fresh: in a new,
//                                                    empty browser context)
//   {"cmd": "wait", "js": EXPR, "timeout": SECONDS}   until EXPR (page context) is truthy
//   {"cmd": "eval", "js": EXPR}                       {"value": EXPR's value (JSON)}
//   {"cmd": "screenshot", "path": FILE}               full-page PNG
//   {"cmd": "quit"}
// Console errors and failed requests of the page are collected and returned
// with every answer as "console" (the test asserts there are none).
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const problems = [];
let context = null;
let page = null;
async function newPage() {
  if (context) await context.close();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  page = await context.newPage();
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
}
await newPage();

function answer(obj) {
  process.stdout.write(JSON.stringify({ ...obj, console: problems.splice(0) }) + "\n");
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let c;
  try {
    c = JSON.parse(line);
    if (c.cmd === "open") {
      if (c.fresh) await newPage();   // a new tab with nothing stored (no token)
      const r = await page.goto(c.url, { waitUntil: "load", timeout: 30000 });
      answer({ ok: true, status: r ? r.status() : null });
    } else if (c.cmd === "wait") {
      await page.waitForFunction(c.js, null, { timeout: (c.timeout || 30) * 1000, polling: 100 });
      answer({ ok: true });
    } else if (c.cmd === "eval") {
      answer({ ok: true, value: await page.evaluate(c.js) });
    } else if (c.cmd === "screenshot") {
      await page.screenshot({ path: c.path, fullPage: true });
      answer({ ok: true });
    } else if (c.cmd === "quit") {
      answer({ ok: true });
      break;
    } else {
      answer({ ok: false, error: `unknown command ${JSON.stringify(c.cmd)}` });
    }
  } catch (e) {
    answer({ ok: false, error: String(e && e.message ? e.message : e) });
  }
}
await browser.close();
process.exit(0);
