// UI smoke test: a real headless Chromium drives the Dagster UI of the demo code location.
//
//   node scripts/ui_smoke.mjs <dagster url> <screenshot dir>
//
// Normally started by scripts/ui_smoke.sh, which installs Chromium and playwright-core,
// starts `dagster dev` on a throwaway DAGSTER_HOME and lake, and stops it afterwards.
//
// Steps: the code location's Assets page lists all 9 demo asset keys; the global asset
// lineage graph is screenshotted (asset_graph.png); "Materialize all" is clicked in the UI;
// the run page is followed until the run succeeds (bounded); every asset must then have a
// materialization from that run (checked through the GraphQL API as a second source of
// truth); the asset page of analytics/top_customers is screenshotted with the latest
// materialization's metadata (asset_metadata.png) and the graph again, now materialized
// (asset_graph_materialized.png).
//
// Playwright uses the system Chromium (/usr/bin/chromium, or $CHROMIUM_PATH); it never
// downloads a browser. Every request that is not to the Dagster server is aborted.
//
// Environment: UI_SMOKE_RUN_TIMEOUT_S (default 300), UI_SMOKE_DEBUG_DIR (failure
// screenshots go there; default: the screenshot dir), UI_SMOKE_WATCH=1 (keep the live run
// page open during the run instead of reopening it at the end), UI_SMOKE_HEADFUL=1.

import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// playwright-core lives in scripts/ui/node_modules (its own package.json), not at the root.
const here = path.dirname(fileURLToPath(import.meta.url));
const { chromium } = createRequire(path.join(here, 'ui', 'package.json'))('playwright-core');

const [base0, shotDir0] = process.argv.slice(2);
if (!base0 || !shotDir0) {
  console.error('usage: node scripts/ui_smoke.mjs <dagster url> <screenshot dir>');
  process.exit(2);
}
const BASE = base0.replace(/\/+$/, '');
const SHOT_DIR = path.resolve(shotDir0);
const DEBUG_DIR = path.resolve(process.env.UI_SMOKE_DEBUG_DIR || SHOT_DIR);
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const RUN_TIMEOUT_MS = Number(process.env.UI_SMOKE_RUN_TIMEOUT_S || 300) * 1000;
const LOCATION = 'assetlake_demo';
const ASSET_KEYS = [
  'raw/customers',
  'raw/orders',
  'staging/orders',
  'analytics/customers',
  'analytics/dim_customer',
  'analytics/fct_orders',
  'analytics/customer_revenue',
  'analytics/top_customers',
  'ops/load_log',
];
const GROUPS = ['raw', 'customers', 'sales', 'ops'];
const METADATA_ASSET = 'analytics/top_customers';
const VIEWPORT = { width: 1400, height: 900 };
const ASSET_PAGE_VIEWPORT = { width: 1600, height: 900 }; // wide enough for the preview table

const t0 = Date.now();
const log = (...a) => console.log(`[ui_smoke +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class SmokeFailure extends Error {}
const fail = (msg) => {
  throw new SmokeFailure(msg);
};

async function graphql(query, variables = {}) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) fail(`GraphQL HTTP ${res.status}: ${(await res.text()).slice(0, 500)}`);
  const body = await res.json();
  if (body.errors) fail(`GraphQL errors: ${JSON.stringify(body.errors).slice(0, 1000)}`);
  return body.data;
}

async function waitForLocationLoaded(timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    const data = await graphql(`{ workspaceOrError { __typename ... on Workspace {
      locationEntries { name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }`);
    const entry = data.workspaceOrError.locationEntries?.find((e) => e.name === LOCATION);
    if (entry && entry.loadStatus === 'LOADED') {
      if (entry.locationOrLoadError?.__typename === 'PythonError') {
        fail(`code location ${LOCATION} failed to load:\n${entry.locationOrLoadError.message}`);
      }
      if (entry.locationOrLoadError?.__typename === 'RepositoryLocation') return;
    }
    last = JSON.stringify(entry ?? data.workspaceOrError).slice(0, 300);
    await sleep(1000);
  }
  fail(`code location ${LOCATION} not loaded after ${timeoutMs / 1000}s (last: ${last})`);
}

async function runStatus(runId) {
  const data = await graphql(
    `query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } ... on PythonError { message } } }`,
    { id: runId },
  );
  return data.runOrError.status ?? data.runOrError.__typename;
}

async function latestMaterializations() {
  const data = await graphql(`{ assetNodes { assetKey { path } repository { location { name } }
    assetMaterializations(limit: 1) { runId } } }`);
  return new Map(
    data.assetNodes
      .filter((n) => n.repository.location.name === LOCATION)
      .map((n) => [n.assetKey.path.join('/'), n.assetMaterializations[0]?.runId ?? null]),
  );
}

const expandedParam = () =>
  encodeURIComponent(GROUPS.map((g) => `global@global:${g}`).join(','));

/** The global lineage graph with every group expanded, zoomed so nodes show details, centred. */
async function screenshotGraph(page, file) {
  await page.goto(`${BASE}/asset-groups?expanded=${expandedParam()}`);
  const materializeAll = page.getByRole('button', { name: 'Materialize all' });
  await materializeAll.waitFor({ timeout: 60_000 });
  // Every asset node rendered (group boxes + asset boxes are SVG foreignObjects).
  for (const name of ['top_customers', 'customer_revenue', 'fct_orders', 'dim_customer', 'load_log']) {
    await page.locator('foreignObject', { hasText: name }).first().waitFor({ timeout: 60_000 });
  }
  // Hide the asset tree beside the graph: more room for the graph itself.
  const treeToggle = page.locator('button:has([aria-label="panel_show_right"])').last();
  if (await page.getByPlaceholder('Jump to…').isVisible().catch(() => false)) {
    await treeToggle.click();
  }
  await page.waitForTimeout(800);
  // At "fit to screen" zoom Dagster draws bare names; one step in shows the node details.
  const zoomIn = page.locator('button:has([aria-label="zoom_in"])');
  for (let i = 0; i < 3; i++) {
    if (await page.getByText('Latest event').first().isVisible().catch(() => false)) break;
    await zoomIn.click();
    await page.waitForTimeout(800);
  }
  // At that zoom the demo's graph is taller than a 900 px window: grow the window to the
  // graph (as the asset page does) so the picture shows all of it, then centre it.
  const overflow = await page.evaluate(() => {
    const rects = [...document.querySelectorAll('foreignObject')].map((f) => f.getBoundingClientRect());
    if (!rects.length) return 0;
    const graphHeight = Math.max(...rects.map((r) => r.bottom)) - Math.min(...rects.map((r) => r.top)) + 30;
    const toolbar = [...document.querySelectorAll('button')].find((b) => b.innerText.trim() === 'Materialize all');
    const canvasHeight = window.innerHeight - (toolbar ? toolbar.getBoundingClientRect().bottom + 12 : 0);
    return Math.ceil(graphHeight + 40 - canvasHeight);
  });
  if (overflow > 0) {
    await page.setViewportSize({ width: VIEWPORT.width, height: Math.min(VIEWPORT.height + overflow, 2400) });
    await page.waitForTimeout(800);
  }
  // Centre the graph in the canvas by dragging the background.
  const box = await page.evaluate(() => {
    const fos = [...document.querySelectorAll('foreignObject')];
    if (!fos.length) return null;
    const rects = fos.map((f) => f.getBoundingClientRect());
    const u = {
      left: Math.min(...rects.map((r) => r.left)),
      top: Math.min(...rects.map((r) => r.top)),
      right: Math.max(...rects.map((r) => r.right)),
      bottom: Math.max(...rects.map((r) => r.bottom)) + 30, // kind tags under the nodes
    };
    // The canvas: the graph's clipping viewport, below the toolbar, left of the zoom controls.
    let vp = fos[0].ownerSVGElement;
    while (vp && getComputedStyle(vp).overflow !== 'hidden') vp = vp.parentElement;
    if (!vp) return null;
    const v = vp.getBoundingClientRect();
    const toolbar = [...document.querySelectorAll('button')].find((b) => b.innerText.trim() === 'Materialize all');
    const top = Math.max(v.top, toolbar ? toolbar.getBoundingClientRect().bottom + 12 : v.top);
    const canvas = { left: v.left, top, right: v.right - 50, bottom: Math.min(v.bottom, window.innerHeight) };
    // A background point to drag from: in the viewport, outside every node and control.
    const inside = (x, y) => rects.some((r) => x >= r.left - 5 && x <= r.right + 5 && y >= r.top - 5 && y <= r.bottom + 5);
    let grab = null;
    for (let y = canvas.top + 10; y < canvas.bottom - 10 && !grab; y += 20) {
      for (let x = canvas.left + 10; x < canvas.right - 10 && !grab; x += 20) {
        const hit = document.elementFromPoint(x, y);
        if (!inside(x, y) && hit && vp.contains(hit) && !hit.closest('button, a, input')) grab = { x, y };
      }
    }
    return { u, canvas, grab };
  });
  if (box?.grab) {
    const dx = (box.canvas.left + box.canvas.right) / 2 - (box.u.left + box.u.right) / 2;
    const dy = (box.canvas.top + box.canvas.bottom) / 2 - (box.u.top + box.u.bottom) / 2;
    if (Math.abs(dx) > 4 || Math.abs(dy) > 4) {
      await page.mouse.move(box.grab.x, box.grab.y);
      await page.mouse.down();
      await page.mouse.move(box.grab.x + dx / 2, box.grab.y + dy / 2, { steps: 5 });
      await page.mouse.move(box.grab.x + dx, box.grab.y + dy, { steps: 5 });
      await page.mouse.up();
    }
  }
  await page.mouse.move(5, page.viewportSize().height - 5); // no hover highlight in the picture
  await page.waitForTimeout(1000);
  await page.screenshot({ path: file });
  log(`screenshot ${file}`);
  await page.setViewportSize(VIEWPORT);
}

/** The asset page of METADATA_ASSET, all of it: latest materialization, row count, columns, metadata. */
async function screenshotAssetPage(page, file) {
  await page.setViewportSize(ASSET_PAGE_VIEWPORT);
  await page.goto(`${BASE}/assets/${METADATA_ASSET}`);
  for (const text of ['Latest materialization', 'Row count', 'Columns', 'revenue_rank', 'delta/version', 'assetlake/preview']) {
    await page.getByText(text, { exact: true }).first().waitFor({ timeout: 60_000 })
      .catch(() => fail(`"${text}" not shown on the asset page of ${METADATA_ASSET}`));
  }
  await page.getByText('Customer 026').first().waitFor({ timeout: 10_000 }).catch(() => {}); // the preview table
  // The page scrolls inside its own panel: grow the window to show all of it in one picture.
  const extra = await page.evaluate(() => Math.max(0, ...[...document.querySelectorAll('*')]
    .filter((e) => /(auto|scroll)/.test(getComputedStyle(e).overflowY) && e.clientHeight > 300)
    .map((e) => e.scrollHeight - e.clientHeight)));
  await page.setViewportSize({ width: ASSET_PAGE_VIEWPORT.width, height: Math.min(ASSET_PAGE_VIEWPORT.height + extra + 20, 3200) });
  await page.mouse.move(5, 5);
  await page.waitForTimeout(1500);
  // Down to the end of the Metadata section (the lineage links below it add nothing).
  const lineage = await page.getByText('Upstream assets', { exact: true }).first().boundingBox().catch(() => null);
  const height = page.viewportSize().height;
  const clipBottom = lineage ? Math.min(height, Math.max(600, lineage.y - 60)) : height;
  await page.screenshot({ path: file, clip: { x: 0, y: 0, width: ASSET_PAGE_VIEWPORT.width, height: clipBottom } });
  log(`screenshot ${file}`);
  await page.setViewportSize(VIEWPORT);
}

async function main() {
  mkdirSync(SHOT_DIR, { recursive: true });
  mkdirSync(DEBUG_DIR, { recursive: true });

  log(`Dagster at ${BASE}; waiting for code location ${LOCATION}`);
  await waitForLocationLoaded();
  const before = await latestMaterializations();
  const missing = ASSET_KEYS.filter((k) => !before.has(k));
  if (missing.length) fail(`assets missing from the code location (GraphQL): ${missing.join(', ')}`);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.UI_SMOKE_HEADFUL !== '1',
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking'],
  });
  const origin = new URL(BASE).origin;
  const newPage = async (deviceScaleFactor) => {
    const context = await browser.newContext({ viewport: VIEWPORT, deviceScaleFactor });
    // Keep all traffic on the Dagster server: the UI would otherwise fetch telemetry from the internet.
    await context.route(
      (url) => url.origin !== origin && !['blob:', 'data:', 'about:'].includes(url.protocol),
      (route) => route.abort(),
    );
    // No "Join the Dagster community" modal over the pages; the left navigation collapsed.
    await context.addInitScript(() => {
      try {
        localStorage.setItem('communityNux', '"1"');
        localStorage.setItem('dagster-nav-collapsed', 'true');
      } catch {} // about:blank has no localStorage
    });
    context.setDefaultTimeout(30_000);
    const p = await context.newPage();
    p.on('pageerror', (e) => log(`page error: ${String(e).slice(0, 300)}`));
    return p;
  };
  // The clicking happens at 1x; the README pictures are taken at 2x (crisp text) in a page of
  // their own, so the live run page does not cost 4x the rendering while Spark runs.
  const page = await newPage(1);
  const shots = await newPage(2);

  try {
    // 1. The code location's Assets page lists every demo asset key.
    await page.goto(`${BASE}/locations/${LOCATION}/assets`);
    await page.getByRole('heading', { name: LOCATION }).or(page.getByText(LOCATION).first()).first().waitFor();
    for (const group of GROUPS) {
      // Groups are collapsed rows ("sales  3 assets"): open each one.
      const row = page.getByText(group, { exact: true }).first();
      await row.waitFor();
      await row.click();
    }
    for (const key of ASSET_KEYS) {
      await page.locator(`a[href$="/assets/${key}"]`).first().waitFor({ timeout: 30_000 })
        .catch(() => fail(`asset ${key} is not listed on /locations/${LOCATION}/assets`));
      const text = key.split('/').join(' / ');
      if (!(await page.getByText(text, { exact: true }).first().isVisible())) {
        fail(`asset ${key} ("${text}") is not visible on /locations/${LOCATION}/assets`);
      }
    }
    log(`all ${ASSET_KEYS.length} asset keys visible on /locations/${LOCATION}/assets`);

    // 2. The global asset lineage graph.
    await screenshotGraph(shots, path.join(SHOT_DIR, 'asset_graph.png'));
    await shots.goto('about:blank'); // idle while the run goes on

    // 3. "Materialize all", launched from the UI.
    await page.goto(`${BASE}/asset-groups`);
    await page.locator('foreignObject', { hasText: 'ops' }).first().waitFor({ timeout: 60_000 });
    const materializeAll = page.getByRole('button', { name: 'Materialize all' });
    await page.waitForFunction(
      () => [...document.querySelectorAll('button')].some((b) => b.innerText.trim() === 'Materialize all' && !b.disabled),
    );
    await materializeAll.click();
    log('clicked "Materialize all"');
    const toast = page.getByText(/Launched run [0-9a-f]{8}/).first();
    const dialog = page.getByRole('dialog').last();
    const launchDeadline = Date.now() + 60_000;
    while (!(await toast.isVisible().catch(() => false))) {
      if (Date.now() > launchDeadline) fail('no "Launched run" toast within 60 s of clicking "Materialize all"');
      if (await dialog.isVisible().catch(() => false)) {
        // A confirmation (or launchpad) dialog: confirm it with its primary button.
        const confirm = dialog.getByRole('button', { name: /^(Materialize|Launch|Confirm|Yes|Continue)/ }).last();
        if (await confirm.isVisible().catch(() => false)) {
          log(`confirming dialog: "${(await confirm.innerText()).trim()}"`);
          await confirm.click();
        }
      }
      await page.waitForTimeout(250);
    }
    const shortId = (await toast.innerText()).match(/Launched run ([0-9a-f]{8})/)[1];
    log(`UI says: launched run ${shortId}`);

    // 4. Follow the toast to the run page.
    try {
      await page.getByRole('button', { name: 'View', exact: true })
        .or(page.getByRole('link', { name: 'View', exact: true })).first().click({ timeout: 10_000 });
      await page.waitForURL(new RegExp(`/runs/${shortId}[0-9a-f-]*`), { timeout: 20_000 });
    } catch (e) {
      // The toast can vanish before the click lands: open the run from the Runs list instead.
      log(`toast's "View" not usable (${String(e).split('\n')[0]}); opening the run from /runs`);
      await page.goto(`${BASE}/runs`);
      await page.getByRole('link', { name: shortId }).first().click();
      await page.waitForURL(new RegExp(`/runs/${shortId}[0-9a-f-]*`));
    }
    const runId = page.url().match(/\/runs\/([0-9a-f-]{36})/)[1];
    const runUrl = page.url();
    await page.getByText(/^(Queued|Starting|Started|Success)$/).first().waitFor()
      .catch(() => fail(`the run page ${runUrl} shows no run status`));
    log(`run page ${runUrl} shows the run`);

    // 5. Wait (bounded) for the run to finish. The live run page (Gantt chart, log stream) keeps
    // Chromium at ~half a core, taken from Spark on a 2-core machine: the page idles meanwhile
    // (UI_SMOKE_WATCH=1 keeps it open) and is opened again to read the outcome.
    if (process.env.UI_SMOKE_WATCH !== '1') await page.goto('about:blank');
    const runDeadline = Date.now() + RUN_TIMEOUT_MS;
    let status = await runStatus(runId);
    let lastLogged = '';
    while (!['SUCCESS', 'FAILURE', 'CANCELED'].includes(status)) {
      if (Date.now() > runDeadline) {
        if (page.url() !== runUrl) await page.goto(runUrl).catch(() => {});
        await page.waitForTimeout(3000);
        await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_run_timeout.png') });
        fail(`run ${runId} still ${status} after ${RUN_TIMEOUT_MS / 1000}s`);
      }
      if (status !== lastLogged) log(`run status: ${status}`);
      lastLogged = status;
      await sleep(2000);
      status = await runStatus(runId);
    }
    log(`run status (GraphQL): ${status}`);
    // The UI must say the same.
    if (page.url() !== runUrl) await page.goto(runUrl);
    const uiWord = { SUCCESS: 'Success', FAILURE: 'Failure', CANCELED: 'Canceled' }[status];
    await page.getByText(uiWord, { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail(`GraphQL says ${status} but the run page does not show "${uiWord}"`));
    if (status !== 'SUCCESS') {
      await page.waitForTimeout(3000);
      await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_run_failed.png') });
      fail(`run ${runId} ended ${status}; see ${path.join(DEBUG_DIR, 'ui_smoke_run_failed.png')}`);
    }
    await page.getByText(`Succeeded (${ASSET_KEYS.length})`, { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail(`the run page does not show "Succeeded (${ASSET_KEYS.length})" steps`));
    log(`run page shows "${uiWord}", "Succeeded (${ASSET_KEYS.length})"`);

    // 6. Second source of truth: every asset's latest materialization is from this run.
    const after = await latestMaterializations();
    const notDone = ASSET_KEYS.filter((k) => after.get(k) !== runId);
    if (notDone.length) fail(`assets without a materialization from run ${runId}: ${notDone.join(', ')}`);
    log(`GraphQL: all ${ASSET_KEYS.length} assets materialized by run ${runId}`);

    // 7. The asset page: latest materialization, row count, schema, Delta version, preview.
    await screenshotAssetPage(shots, path.join(SHOT_DIR, 'asset_metadata.png'));

    // 8. The graph again, now that every asset is materialized.
    await screenshotGraph(shots, path.join(SHOT_DIR, 'asset_graph_materialized.png'));

    log(`PASS: run ${runId} materialized all ${ASSET_KEYS.length} assets from the UI`);
  } catch (e) {
    const shot = path.join(DEBUG_DIR, 'ui_smoke_failure.png');
    await page.screenshot({ path: shot }).then(() => log(`failure screenshot: ${shot} (page ${page.url()})`)).catch(() => {});
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`[ui_smoke] FAIL: ${e instanceof SmokeFailure ? e.message : e.stack || e}`);
    process.exit(1);
  },
);
