// Open a report page in headless Chromium and check what a reader would see: every chart
// rendered, nothing logged to the console as an error, and nothing fetched from the network.
//
// Usage: node check.mjs PAGE.html
//
// The page fails when:
//   - an <img>, <svg>, <object> or <embed> is drawn with no size, or an image did not load;
//   - a linked chart file (an <a href> ending .png or .svg) does not load as an image, or
//     another linked local file is missing;
//   - the page has no chart at all;
//   - anything is logged to the console as an error, or a script throws;
//   - the page requests anything that is not a file: or data: URL. Such requests are aborted
//     before they leave the browser, so a failing page fetches nothing either.
//
// Chromium: $CHROMIUM if set, else chromium, chromium-browser or google-chrome on the PATH
// (Debian's chromium package in CI). As root it runs without its sandbox, which needs a user
// namespace that containers seldom give.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const timeoutMs = 60_000;

function usage(msg) {
  console.error('check (browser): ' + msg);
  process.exit(2);
}

function findChromium() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    for (const dir of (process.env.PATH || '').split(path.delimiter)) {
      const p = path.join(dir || '.', name);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        return p;
      } catch {
        // not here
      }
    }
  }
  return null;
}

const [pageArg] = process.argv.slice(2);
if (!pageArg) usage('usage: node check.mjs PAGE.html');
const pagePath = path.resolve(pageArg);
if (!fs.existsSync(pagePath)) usage(`${pageArg}: no such file`);
const executablePath = findChromium();
if (!executablePath) usage('no chromium on the PATH (apt-get install chromium, or set CHROMIUM)');

const allowed = (url) => url.startsWith('file:') || url.startsWith('data:');
const problems = [];
const problem = (kind, msg) => problems.push(`${kind}: ${msg}`);

const args = ['--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'];
if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
const browser = await puppeteer.launch({ executablePath, headless: true, args, timeout: timeoutMs });
// A hung page must not hang CI: give up after the limit, closing the browser.
const guard = setTimeout(() => {
  console.error(`check (browser): ${pageArg}: gave up after ${timeoutMs / 1000} s`);
  browser.process()?.kill('SIGKILL');
  process.exit(1);
}, timeoutMs);

let summary;
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(timeoutMs);
  await page.setRequestInterception(true);
  let requests = 0;
  page.on('request', (req) => {
    requests++;
    if (allowed(req.url())) {
      req.continue();
      return;
    }
    problem('network request', `${req.method()} ${req.url()} (aborted: the page may load only file: and data: URLs)`);
    req.abort('blockedbyclient');
  });
  page.on('requestfailed', (req) => {
    // Requests of other schemes were reported when they were made.
    if (allowed(req.url())) problem('failed to load', `${req.url()}: ${req.failure()?.errorText}`);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      const where = msg.location()?.url ? ` (${msg.location().url})` : '';
      problem('console error', msg.text() + where);
    }
  });
  page.on('pageerror', (err) => problem('console error', `uncaught: ${err.message}`));

  await page.goto(pathToFileURL(pagePath).href, { waitUntil: ['load', 'networkidle0'] });

  // Each graphic as drawn: inline SVG (only the outermost, a chart's own), images, objects.
  const drawn = await page.evaluate(() =>
    [...document.querySelectorAll('img, svg, object, embed')]
      .filter((el) => !(el.tagName.toLowerCase() === 'svg' && el.parentElement?.closest('svg')))
      .map((el) => {
        const r = el.getBoundingClientRect();
        const fig = el.closest('figure');
        return {
          tag: el.tagName.toLowerCase(),
          name: el.getAttribute('src') || el.getAttribute('data') || (fig && fig.id) || el.id || '(unnamed)',
          width: r.width,
          height: r.height,
          loaded: el.tagName.toLowerCase() === 'img' ? el.complete && el.naturalWidth > 0 : true,
        };
      }),
  );
  for (const g of drawn) {
    if (!g.loaded) problem('chart not rendered', `<${g.tag}> ${g.name}: the image did not load`);
    else if (!(g.width > 0 && g.height > 0)) problem('chart not rendered', `<${g.tag}> ${g.name}: drawn ${g.width}×${g.height}`);
  }
  if (drawn.length === 0) problem('chart not rendered', 'the page has no <img>, <svg>, <object> or <embed>');

  // The files the page links: chart images must load as images, anything else must exist.
  const links = await page.evaluate(() => [...document.querySelectorAll('a[href]')].map((a) => a.href));
  const images = [];
  for (const href of new Set(links)) {
    if (!href.startsWith('file:')) continue;
    const u = new URL(href);
    u.hash = '';
    if (/\.(png|svg)$/i.test(u.pathname)) images.push(u.href);
    else if (!fs.existsSync(fileURLToPath(u))) problem('missing file', `${href} is linked but does not exist`);
  }
  const loaded = await page.evaluate(
    (srcs) =>
      Promise.all(
        srcs.map(
          (src) =>
            new Promise((resolve) => {
              const img = new Image();
              img.onload = () => resolve({ src, w: img.naturalWidth, h: img.naturalHeight });
              img.onerror = () => resolve({ src, w: 0, h: 0 });
              img.src = src;
            }),
        ),
      ),
    images,
  );
  for (const l of loaded) {
    if (!(l.w > 0 && l.h > 0)) problem('chart file', `${l.src} does not load as an image`);
  }
  summary =
    `${drawn.length} graphics rendered (${drawn.filter((g) => g.tag === 'svg').length} inline svg), ` +
    `${loaded.length} linked chart files loaded, ${requests} requests, all file: or data:`;
} finally {
  clearTimeout(guard);
  await browser.close();
}

if (problems.length > 0) {
  console.error(`check (browser): ${pageArg}: ${problems.length} problems`);
  for (const p of problems) console.error('  ' + p);
  process.exit(1);
}
console.log(`check (browser): ${pageArg}: ${summary}; no console error`);
