// UI smoke test: a real headless Chromium drives the Dagster UI of the demo code location.
//
//   node scripts/ui_smoke.mjs <dagster url> <screenshot dir>
//
// Normally started by scripts/ui_smoke.sh, which installs Chromium and playwright-core,
// starts `dagster dev` on a throwaway DAGSTER_HOME and lake, and stops it afterwards.
//
// Steps, as a new user does them: the code location's Assets page lists all 10 demo asset
// keys; the global asset lineage graph is screenshotted (asset_graph.png); "Materialize all…"
// is clicked: the demo has partitioned assets (daily staging/orders, monthly
// analytics/monthly_revenue), so Dagster opens its "Launch runs to materialize 10 assets"
// dialog (all partitions; its assets have different partitions definitions, so no range)
// and "Launch backfill" is clicked; the toast's "View" opens the backfill page; the backfill
// is followed (bounded) until it completes, the daemon running it as batch runs one at a
// time (scripts/dagster.yaml); the backfill page must say "Succeeded" for every asset
// (backfill.png) and GraphQL, the second source of truth, must report every partition
// materialized and every unpartitioned asset materialized by a run of this backfill. Then
// the asset page of analytics/monthly_revenue with its latest partition's metadata
// (asset_metadata.png), the partitions of staging/orders (asset_partitions.png) and the
// graph again, now materialized (asset_graph_materialized.png).
//
// Then a failing data test, as the README tells users to watch one: raw/customers +
// analytics/customers are launched exactly as the launchpad launches them (the
// LaunchPipelineExecution mutation on the implicit __ASSET_JOB, with their checks and the run
// config {"ops": {"raw__customers": {"config": {"duplicate_customer_id": 7}}}}); the run must
// end FAILURE, its step failure saying "data test unique_customer_id … Nothing was written";
// GraphQL must still report the backfill's materialization as analytics/customers' latest and
// the failed evaluation as the check's latest execution; the asset's Checks tab must show
// unique_customer_id Failed with its metadata (failing 1, samples "7 x2" in the JSON dialog)
// (failed_check.png). Finally "Execute all" on that tab runs the checks on their own against
// the committed table (no duplicate: the bad write was blocked): the run must succeed, every
// check pass on the committed table with no new materialization (GraphQL), and the tab show
// unique_customer_id Succeeded / Passed.
//
// Playwright uses the system Chromium (/usr/bin/chromium, or $CHROMIUM_PATH); it never
// downloads a browser. Every request that is not to the Dagster server is aborted.
//
// Environment: UI_SMOKE_RUN_TIMEOUT_S (the backfill's time limit, default 480),
// UI_SMOKE_STEP_TIMEOUT_S (the time limit of each later single run, default 600),
// UI_SMOKE_DEBUG_DIR (failure screenshots go there; default: the screenshot dir),
// UI_SMOKE_WATCH=1 (keep the live backfill page open while it runs instead of reopening it
// at the end), UI_SMOKE_HEADFUL=1.

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
const RUN_TIMEOUT_MS = Number(process.env.UI_SMOKE_RUN_TIMEOUT_S || 480) * 1000;
const LOCATION = 'assetlake_demo';
const ASSET_KEYS = [
  'raw/customers',
  'raw/orders',
  'staging/orders',
  'analytics/monthly_revenue',
  'analytics/customers',
  'analytics/dim_customer',
  'analytics/fct_orders',
  'analytics/customer_revenue',
  'analytics/top_customers',
  'ops/load_log',
];
const GROUPS = ['raw', 'customers', 'sales', 'ops'];
// The partitioned ones and their partition counts (orders.sql, monthly_revenue.sql).
const PARTITIONS = { 'staging/orders': 91, 'analytics/monthly_revenue': 3 };
const METADATA_ASSET = 'analytics/monthly_revenue';
const PARTITIONS_ASSET = 'staging/orders';
const VIEWPORT = { width: 1400, height: 900 };
const ASSET_PAGE_VIEWPORT = { width: 1600, height: 900 }; // wide enough for the preview table
// The data test the README tells users to watch (customers.sql: `-- data_test unique
// customer_id`): a duplicate customer injected through raw/customers' run config
// (sources.py) must fail it before the merge into analytics/customers commits.
const CHECK_ASSET = 'analytics/customers';
const CHECK_NAME = 'unique_customer_id';
const BAD_WRITE_ASSETS = ['raw/customers', CHECK_ASSET];
// What a user types into the launchpad's config editor (the launchpad sends its text):
// {"ops": {"raw__customers": {"config": {"duplicate_customer_id": 7}}}}.
const BAD_WRITE_RUN_CONFIG = 'ops:\n  raw__customers:\n    config:\n      duplicate_customer_id: 7\n';
const BAD_WRITE_SAMPLE = '7 x2'; // the failing value and its count, in the check's `samples`
const STEP_TIMEOUT_MS = Number(process.env.UI_SMOKE_STEP_TIMEOUT_S || 600) * 1000; // per single run

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

/** The backfill's status and its runs' statuses (the daemon adds runs as upstreams finish). */
async function backfillState(backfillId) {
  const data = await graphql(
    `query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
      ... on PartitionBackfill { status runs(limit: 200) { runId status } }
      ... on PythonError { message } ... on BackfillNotFoundError { message } } }`,
    { id: backfillId },
  );
  const b = data.partitionBackfillOrError;
  if (b.__typename !== 'PartitionBackfill') fail(`backfill ${backfillId}: ${b.__typename} ${b.message ?? ''}`);
  return b;
}

/** Per demo asset: the run of its latest materialization and its partition counts. */
async function assetStates() {
  const data = await graphql(`{ assetNodes { assetKey { path } repository { location { name } }
    assetMaterializations(limit: 1) { runId }
    partitionStats { numMaterialized numFailed numPartitions } } }`);
  return new Map(
    data.assetNodes
      .filter((n) => n.repository.location.name === LOCATION)
      .map((n) => [n.assetKey.path.join('/'), { runId: n.assetMaterializations[0]?.runId ?? null, stats: n.partitionStats }]),
  );
}

const metadataValue = (entries, label) => {
  const e = (entries ?? []).find((m) => m.label === label);
  return e ? (e.intValue ?? e.text ?? e.jsonString ?? null) : undefined;
};

/** An asset's latest materialization and, per check, its latest execution (what the Checks tab shows). */
async function checkState(key) {
  const data = await graphql(
    `query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode {
      assetMaterializations(limit: 1) { runId timestamp }
      assetChecksOrError { __typename ... on AssetChecks { checks { name
        executionForLatestMaterialization { runId status evaluation { success metadataEntries { label
          ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text } ... on JsonMetadataEntry { jsonString } } } } } } } } } }`,
    { key: { path: key.split('/') } },
  );
  const node = data.assetNodeOrError;
  if (node.__typename !== 'AssetNode') fail(`asset ${key}: ${node.__typename}`);
  if (node.assetChecksOrError.__typename !== 'AssetChecks') fail(`asset ${key}: checks ${node.assetChecksOrError.__typename}`);
  return {
    materialization: node.assetMaterializations[0] ?? null,
    checks: new Map(node.assetChecksOrError.checks.map((c) => [c.name, c.executionForLatestMaterialization])),
  };
}

/**
 * Launches a run of `keys` with `runConfigYaml` exactly as the launchpad does (shift-click
 * "Materialize" → "Launch run"): the LaunchPipelineExecution mutation on the assets' common
 * job (the implicit __ASSET_JOB), the assets and all their checks in that job selected
 * (LaunchAssetExecutionButton's session presets; LaunchpadSession's buildExecutionVariables).
 */
async function launchLikeTheLaunchpad(keys, runConfigYaml) {
  const data = await graphql(
    `query($keys: [AssetKeyInput!]) { assetNodes(assetKeys: $keys) { assetKey { path } jobNames
      repository { name location { name } }
      assetChecksOrError { __typename ... on AssetChecks { checks { name jobNames } } } } }`,
    { keys: keys.map((k) => ({ path: k.split('/') })) },
  );
  const nodes = data.assetNodes;
  const found = nodes.map((n) => n.assetKey.path.join('/'));
  if (keys.some((k) => !found.includes(k))) fail(`assets to launch not found (GraphQL): wanted ${keys.join(', ')}, got ${found.join(', ')}`);
  const jobName = nodes[0].jobNames.find((j) => nodes.every((n) => n.jobNames.includes(j)));
  if (!jobName) fail(`no job in common to ${keys.join(', ')}`);
  const checks = nodes.flatMap((n) => (n.assetChecksOrError.checks ?? [])
    .filter((c) => c.jobNames.length === 0 || c.jobNames.includes(jobName))
    .map((c) => ({ assetKey: { path: n.assetKey.path }, name: c.name })));
  const executionParams = {
    runConfigData: runConfigYaml,
    selector: {
      repositoryLocationName: nodes[0].repository.location.name,
      repositoryName: nodes[0].repository.name,
      pipelineName: jobName,
      assetSelection: nodes.map((n) => ({ path: n.assetKey.path })),
      assetCheckSelection: checks,
    },
    mode: 'default',
    executionMetadata: { tags: [] },
  };
  const launched = (await graphql(
    `mutation LaunchPipelineExecution($executionParams: ExecutionParams!) {
      launchPipelineExecution(executionParams: $executionParams) { __typename
        ... on LaunchRunSuccess { run { id pipelineName } }
        ... on PipelineNotFoundError { message } ... on InvalidSubsetError { message }
        ... on RunConfigValidationInvalid { errors { message } } ... on PythonError { message } } }`,
    { executionParams },
  )).launchPipelineExecution;
  if (launched.__typename !== 'LaunchRunSuccess') {
    fail(`launching ${keys.join(' + ')} failed: ${launched.__typename} ${launched.message ?? JSON.stringify(launched.errors ?? '')}`);
  }
  log(`launched run ${launched.run.id} of ${launched.run.pipelineName}: ${keys.join(' + ')} `
    + `and ${checks.length} checks, run config ${JSON.stringify(runConfigYaml)}`);
  return launched.run.id;
}

/** Waits (bounded) until run `runId` ends; returns its status and step stats. `page` idles meanwhile. */
async function waitForRun(page, runId, what, timeoutMs = STEP_TIMEOUT_MS) {
  const query = `query($id: ID!) { runOrError(runId: $id) { __typename
    ... on Run { status stepStats { stepKey status } } ... on RunNotFoundError { message } ... on PythonError { message } } }`;
  const deadline = Date.now() + timeoutMs;
  let lastLogged = '';
  for (;;) {
    const run = (await graphql(query, { id: runId })).runOrError;
    if (run.__typename !== 'Run') fail(`${what} (run ${runId}): ${run.__typename} ${run.message ?? ''}`);
    const steps = run.stepStats.map((s) => `${s.stepKey} ${s.status}`).join(', ');
    const line = `${what}: run ${runId.slice(0, 8)} ${run.status}${steps ? ` (${steps})` : ''}`;
    if (line !== lastLogged) log(line);
    lastLogged = line;
    if (['SUCCESS', 'FAILURE', 'CANCELED'].includes(run.status)) return run;
    if (Date.now() > deadline) {
      await page.goto(`${BASE}/runs/${runId}`).catch(() => {});
      await page.waitForTimeout(3000);
      await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_run_timeout.png') }).catch(() => {});
      fail(`${what}: run ${runId} not done after ${timeoutMs / 1000}s (${line})`);
    }
    await sleep(2000);
  }
}

/** A run's step failures (their error messages) and the asset keys it materialized, from its event log. */
async function runOutcome(runId) {
  const failures = [];
  const materialized = [];
  let cursor = null;
  for (let page = 0; page < 50; page++) {
    const conn = (await graphql(
      `query($id: ID!, $cursor: String) { runOrError(runId: $id) { __typename ... on Run {
        eventConnection(afterCursor: $cursor) { cursor hasMore events { __typename
          ... on ExecutionStepFailureEvent { stepKey error { message } }
          ... on MaterializationEvent { assetKey { path } } } } } } }`,
      { id: runId, cursor },
    )).runOrError.eventConnection;
    for (const e of conn.events) {
      if (e.__typename === 'ExecutionStepFailureEvent') failures.push({ stepKey: e.stepKey, message: e.error?.message ?? '' });
      if (e.__typename === 'MaterializationEvent') materialized.push(e.assetKey.path.join('/'));
    }
    cursor = conn.cursor;
    if (!conn.hasMore) break;
  }
  return { failures, materialized };
}

/** The Checks tab's "Evaluation result" of the selected check's latest execution ("Passed", "Failed"…). */
async function evaluationResult(page) {
  const label = page.getByText('Evaluation result', { exact: true }).first();
  await label.waitFor({ timeout: 30_000 }).catch(() => fail('no "Evaluation result" on the Checks tab'));
  // The innermost box holding the label and the result tag (ancestors come first in document order).
  const box = page.locator('div', { has: page.getByText('Evaluation result', { exact: true }) }).filter({ hasText: /Evaluation result\s*\S/ }).last();
  return (await box.innerText()).replace('Evaluation result', '').trim().split('\n')[0].trim();
}

/** The Checks tab of CHECK_ASSET, CHECK_NAME selected: its latest execution failed, with its metadata. */
async function screenshotFailedCheck(page, file) {
  await page.goto(`${BASE}/assets/${CHECK_ASSET}`);
  // As a user: the asset page, its "Checks" tab, the check in the tab's list.
  await page.getByRole('tab', { name: /^Checks/ }).or(page.getByText('Checks', { exact: true })).first().click({ timeout: 60_000 })
    .catch(() => fail(`no "Checks" tab on the asset page of ${CHECK_ASSET}`));
  await page.waitForURL(/view=checks/, { timeout: 20_000 })
    .catch(() => fail(`the "Checks" tab of ${CHECK_ASSET} did not open (page ${page.url()})`));
  const listed = page.getByTitle(CHECK_NAME, { exact: true }).first();
  await listed.waitFor({ timeout: 30_000 }).catch(() => fail(`check ${CHECK_NAME} not listed on the Checks tab of ${CHECK_ASSET}`));
  await listed.click();
  await page.waitForURL(new RegExp(`checkDetail=${CHECK_NAME}`), { timeout: 20_000 })
    .catch(() => fail(`clicking ${CHECK_NAME} on the Checks tab did not select it (page ${page.url()})`));
  // The list row says "Failed"; the detail pane's latest execution too, with the check's metadata.
  const rowStatus = await listed.locator('..').innerText();
  if (!/\bFailed\b/.test(rowStatus)) fail(`the Checks tab lists ${CHECK_NAME} as "${rowStatus.replace(/\s+/g, ' ')}", not Failed`);
  await page.getByText('Latest execution', { exact: true }).first().waitFor({ timeout: 30_000 })
    .catch(() => fail(`no "Latest execution" for ${CHECK_NAME} on the Checks tab`));
  // The metadata table: one row per entry, label then value ("failing 1", "samples [Show JSON]").
  const metadata = page.locator('table').filter({ hasText: 'rows_tested' }).last();
  await metadata.waitFor({ timeout: 30_000 }).catch(() => fail(`no metadata shown for ${CHECK_NAME}'s latest execution`));
  const rows = Object.fromEntries((await metadata.locator('tr').allInnerTexts())
    .map((t) => t.split(/\t|\n/).map((s) => s.trim()).filter(Boolean))
    .map(([label, ...value]) => [label, value.join(' ')]));
  log(`Checks tab, ${CHECK_NAME}: list says "${rowStatus.split('\n').pop().trim()}", metadata ${JSON.stringify(rows)}`);
  const result = await evaluationResult(page);
  if (result !== 'Failed') fail(`the latest execution of ${CHECK_NAME} shows evaluation result "${result}", not Failed`);
  if (rows.failing !== '1') fail(`${CHECK_NAME}'s metadata shows failing=${rows.failing}, expected 1`);
  // `samples` is JSON metadata: "[Show JSON]" opens it in a dialog.
  await metadata.getByText('[Show JSON]').first().click()
    .catch(() => fail(`${CHECK_NAME}'s metadata has no "samples" JSON to open`));
  const samples = page.getByRole('dialog').last();
  await samples.getByText(BAD_WRITE_SAMPLE).first().waitFor({ timeout: 10_000 })
    .catch(async () => fail(`${CHECK_NAME}'s samples do not show "${BAD_WRITE_SAMPLE}": `
      + `${(await samples.innerText().catch(() => 'no dialog')).replace(/\s+/g, ' ').slice(0, 300)}`));
  log(`Checks tab, ${CHECK_NAME}: samples ${(await samples.innerText()).replace(/\s+/g, ' ').slice(0, 120)}`);
  await page.keyboard.press('Escape');
  await samples.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {});
  // Down to the end of the metadata (the plots below add nothing).
  await page.mouse.move(5, 5);
  await page.waitForTimeout(1000);
  const plots = await page.getByText('Plots', { exact: true }).first().boundingBox().catch(() => null);
  const height = page.viewportSize().height;
  const clipBottom = plots ? Math.min(height, Math.max(400, plots.y - 16)) : height;
  await page.screenshot({ path: file, clip: { x: 0, y: 0, width: page.viewportSize().width, height: clipBottom } });
  log(`screenshot ${file}`);
}

/**
 * On the Checks tab of CHECK_ASSET, clicks "Execute all": the checks run on their own,
 * against the committed table (the asset unselected). Returns the run's id, from the launch
 * mutation's answer and the toast ("Launched run <8 chars>").
 */
async function executeChecksFromUi(page) {
  await page.goto(`${BASE}/assets/${CHECK_ASSET}?view=checks&checkDetail=${CHECK_NAME}`);
  const button = page.locator('button', { hasText: /^\s*Execute all\s*$/ }).first(); // its name includes the icon's
  await button.waitFor({ timeout: 60_000 }).catch(() => fail(`no "Execute all" button on the Checks tab of ${CHECK_ASSET}`));
  await page.waitForFunction(
    () => [...document.querySelectorAll('button')].some((b) => b.innerText.trim() === 'Execute all' && !b.disabled),
    null, { timeout: 30_000 },
  ).catch(() => fail(`"Execute all" stays disabled on the Checks tab of ${CHECK_ASSET}`));
  const answer = page.waitForResponse(
    (r) => r.url().startsWith(`${BASE}/graphql`) && (r.request().postData() ?? '').includes('launchPipelineExecution'),
    { timeout: 60_000 },
  );
  await button.click();
  log(`clicked "Execute all" on the Checks tab of ${CHECK_ASSET}`);
  const body = await (await answer.catch(() => fail('no launch request within 60 s of "Execute all"'))).json();
  const launched = body.data?.launchPipelineExecution;
  if (launched?.__typename !== 'LaunchRunSuccess') {
    fail(`"Execute all" did not launch a run: ${JSON.stringify(body.errors ?? launched).slice(0, 1000)}`);
  }
  const runId = launched.run.id;
  await page.getByText(`Launched run ${runId.slice(0, 8)}`).first().waitFor({ timeout: 30_000 })
    .catch(() => fail(`no "Launched run ${runId.slice(0, 8)}" toast after "Execute all"`));
  log(`UI says: launched run ${runId.slice(0, 8)} (${runId})`);
  return runId;
}

/**
 * After the backfill (every demo table exists; its runs are `backfillRunIds`): a run of
 * raw/customers + analytics/customers with a duplicate customer, launched as the launchpad
 * does, must fail on the data test before the commit, analytics/customers keep its
 * materialization, the Checks tab show the failed check (failed_check.png); "Execute all" on
 * that tab then runs the checks on their own against the committed table: they pass.
 * Clicks happen in `page`, the picture in `shots`.
 */
async function dataTestSteps(page, shots, backfillRunIds) {
  // 11. The bad write: raw/customers gets a second row for customer 7; analytics/customers'
  // merge is staged, its data tests run on the staged table, `unique customer_id` fails.
  const before = await checkState(CHECK_ASSET);
  if (!before.materialization || !backfillRunIds.has(before.materialization.runId)) {
    fail(`${CHECK_ASSET}'s latest materialization is from run ${before.materialization?.runId}, not from the backfill`);
  }
  if (before.checks.get(CHECK_NAME)?.status !== 'SUCCEEDED') {
    fail(`before the bad write, ${CHECK_NAME}'s latest execution is ${JSON.stringify(before.checks.get(CHECK_NAME))}, not SUCCEEDED`);
  }
  const badRunId = await launchLikeTheLaunchpad(BAD_WRITE_ASSETS, BAD_WRITE_RUN_CONFIG);
  const bad = await waitForRun(page, badRunId, 'run with a duplicate customer');
  const outcome = await runOutcome(badRunId);
  const steps = Object.fromEntries(bad.stepStats.map((s) => [s.stepKey, s.status]));
  const failure = outcome.failures.find((f) => f.message.includes(`data test ${CHECK_NAME}`));
  if (bad.status !== 'FAILURE' || !failure) {
    await page.goto(`${BASE}/runs/${badRunId}`).catch(() => {});
    await page.waitForTimeout(3000);
    await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_bad_write_run.png') }).catch(() => {});
    fail(`the run with a duplicate customer (${badRunId}) ended ${bad.status}, steps ${JSON.stringify(steps)}, `
      + `expected FAILURE on "data test ${CHECK_NAME}"; step failures: ${JSON.stringify(outcome.failures).slice(0, 1500)}`);
  }
  if (!failure.message.includes('Nothing was written')) {
    fail(`step ${failure.stepKey} failed on ${CHECK_NAME} without saying "Nothing was written": ${failure.message.slice(0, 1000)}`);
  }
  log(`run ${badRunId.slice(0, 8)} FAILURE, steps ${JSON.stringify(steps)}; ${failure.stepKey}: `
    + `${failure.message.replace(/^[\w.]*Failure: /, '').trim().slice(0, 400)}`);

  // 12. Second source of truth: no new materialization of the table; the failed evaluation
  // of the run is the check's latest execution.
  if (outcome.materialized.includes(CHECK_ASSET)) fail(`the failed run ${badRunId} materialized ${CHECK_ASSET}`);
  const afterBad = await checkState(CHECK_ASSET);
  const m0 = before.materialization;
  const m1 = afterBad.materialization;
  if (m1?.runId !== m0.runId || m1?.timestamp !== m0.timestamp) {
    fail(`${CHECK_ASSET}'s latest materialization changed with the blocked write: ${JSON.stringify(m0)} -> ${JSON.stringify(m1)}`);
  }
  const failedCheck = afterBad.checks.get(CHECK_NAME);
  if (failedCheck?.runId !== badRunId || failedCheck.status !== 'FAILED' || failedCheck.evaluation?.success !== false) {
    fail(`${CHECK_NAME}'s latest execution is ${JSON.stringify(failedCheck).slice(0, 500)}, not the FAILED one of run ${badRunId}`);
  }
  log(`GraphQL: ${CHECK_ASSET}'s latest materialization still from backfill run ${m0.runId.slice(0, 8)}; `
    + `${CHECK_NAME} FAILED in run ${badRunId.slice(0, 8)} (failing ${metadataValue(failedCheck.evaluation.metadataEntries, 'failing')}, `
    + `samples ${metadataValue(failedCheck.evaluation.metadataEntries, 'samples')})`);

  // 13. The UI: the asset's Checks tab shows the check failed, with its metadata.
  await screenshotFailedCheck(shots, path.join(SHOT_DIR, 'failed_check.png'));
  await shots.goto('about:blank');

  // 14. "Execute all" on the Checks tab: a check-only run against the committed table, which
  // holds no duplicate (the bad write was blocked): every check passes.
  const checkRunId = await executeChecksFromUi(page);
  await page.goto('about:blank'); // idle while Spark runs
  const checkRun = await waitForRun(page, checkRunId, 'checks run on their own');
  const afterChecks = await checkState(CHECK_ASSET);
  const passed = afterChecks.checks.get(CHECK_NAME);
  if (checkRun.status !== 'SUCCESS' || passed?.runId !== checkRunId || passed.status !== 'SUCCEEDED') {
    const out = await runOutcome(checkRunId);
    fail(`the checks run ${checkRunId} ended ${checkRun.status}; ${CHECK_NAME}'s latest execution `
      + `${JSON.stringify(passed).slice(0, 500)}; step failures ${JSON.stringify(out.failures).slice(0, 1000)}`);
  }
  const scope = metadataValue(passed.evaluation.metadataEntries, 'scope');
  if (!/committed/.test(scope ?? '')) fail(`${CHECK_NAME} ran on the ${scope}, not on the committed table`);
  if (afterChecks.materialization?.runId !== m0.runId || afterChecks.materialization?.timestamp !== m0.timestamp) {
    fail(`the checks run materialized ${CHECK_ASSET}: ${JSON.stringify(afterChecks.materialization)}`);
  }
  const others = [...afterChecks.checks].filter(([n, e]) => n !== CHECK_NAME && (e?.runId !== checkRunId || e.status !== 'SUCCEEDED'));
  if (others.length) fail(`checks of ${CHECK_ASSET} not SUCCEEDED in run ${checkRunId}: ${JSON.stringify(others).slice(0, 500)}`);
  log(`GraphQL: run ${checkRunId.slice(0, 8)} SUCCESS; all ${afterChecks.checks.size} checks of ${CHECK_ASSET} SUCCEEDED `
    + `on the ${scope} (failing ${metadataValue(passed.evaluation.metadataEntries, 'failing')}), no materialization`);
  // The UI agrees: the tab lists the check as succeeded, its latest execution passed.
  await page.goto(`${BASE}/assets/${CHECK_ASSET}?view=checks&checkDetail=${CHECK_NAME}`);
  const row = page.getByTitle(CHECK_NAME, { exact: true }).first().locator('..');
  await row.getByText('Succeeded', { exact: true }).waitFor({ timeout: 30_000 })
    .catch(async () => fail(`the Checks tab lists ${CHECK_NAME} as "${(await row.innerText().catch(() => '?')).replace(/\s+/g, ' ')}" after run ${checkRunId}, not Succeeded`));
  const result = await evaluationResult(page);
  if (result !== 'Passed') fail(`the Checks tab shows ${CHECK_NAME}'s latest evaluation result "${result}" after run ${checkRunId}, not Passed`);
  log(`Checks tab: ${CHECK_NAME} Succeeded, evaluation result Passed`);
  return { badRunId, checkRunId };
}

const expandedParam = () =>
  encodeURIComponent(GROUPS.map((g) => `global@global:${g}`).join(','));

/** The global lineage graph with every group expanded, zoomed so nodes show details, centred. */
async function screenshotGraph(page, file) {
  await page.goto(`${BASE}/asset-groups?expanded=${expandedParam()}`);
  const materializeAll = page.getByRole('button', { name: /Materialize all/ });
  await materializeAll.waitFor({ timeout: 60_000 });
  // Every asset node rendered (group boxes + asset boxes are SVG foreignObjects).
  for (const name of ['top_customers', 'customer_revenue', 'fct_orders', 'monthly_revenue', 'dim_customer', 'load_log']) {
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
    const toolbar = [...document.querySelectorAll('button')].find((b) => b.innerText.trim().startsWith('Materialize all'));
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
    const toolbar = [...document.querySelectorAll('button')].find((b) => b.innerText.trim().startsWith('Materialize all'));
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

/** The asset page of METADATA_ASSET, all of it: latest materialization (its partition), row count, columns, metadata. */
async function screenshotAssetPage(page, file) {
  await page.setViewportSize(ASSET_PAGE_VIEWPORT);
  await page.goto(`${BASE}/assets/${METADATA_ASSET}`);
  // '2024-03-01': the latest materialization is of the last month's partition.
  for (const text of ['Latest materialization', '2024-03-01', 'Row count', 'Columns', 'revenue', 'delta/version', 'assetlake/preview']) {
    await page.getByText(text, { exact: true }).first().waitFor({ timeout: 60_000 })
      .catch(() => fail(`"${text}" not shown on the asset page of ${METADATA_ASSET}`));
  }
  await page.getByText('refunded').first().waitFor({ timeout: 10_000 }).catch(() => {}); // the preview table
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

/** The Partitions tab of PARTITIONS_ASSET: every day materialized (a green bar, the day list). */
async function screenshotPartitions(page, file) {
  const expected = `Materialized (${PARTITIONS[PARTITIONS_ASSET]})`;
  await page.goto(`${BASE}/assets/${PARTITIONS_ASSET}?view=partitions`);
  await page.getByText(expected, { exact: true }).first().waitFor({ timeout: 60_000 })
    .catch(() => fail(`the Partitions tab of ${PARTITIONS_ASSET} does not show "${expected}"`));
  await page.getByText('Missing (0)', { exact: true }).first().waitFor({ timeout: 10_000 })
    .catch(() => fail(`the Partitions tab of ${PARTITIONS_ASSET} does not show "Missing (0)"`));
  await page.mouse.move(5, 5);
  await page.waitForTimeout(1000);
  await page.screenshot({ path: file });
  log(`screenshot ${file}`);
}

async function main() {
  mkdirSync(SHOT_DIR, { recursive: true });
  mkdirSync(DEBUG_DIR, { recursive: true });

  log(`Dagster at ${BASE}; waiting for code location ${LOCATION}`);
  await waitForLocationLoaded();
  const before = await assetStates();
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
  // their own, so the live backfill page does not cost 4x the rendering while Spark runs.
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

    // 3. "Materialize all…": partitioned assets in the selection, so a dialog, not a run.
    await page.goto(`${BASE}/asset-groups`);
    await page.locator('foreignObject', { hasText: 'ops' }).first().waitFor({ timeout: 60_000 });
    await page.waitForFunction(
      () => [...document.querySelectorAll('button')].some((b) => b.innerText.trim().startsWith('Materialize all') && !b.disabled),
    );
    await page.getByRole('button', { name: /Materialize all/ }).click();
    log('clicked "Materialize all…"');
    const dialog = page.getByRole('dialog').filter({ hasText: `materialize ${ASSET_KEYS.length} assets` }).last();
    await dialog.waitFor({ timeout: 30_000 })
      .catch(() => fail(`no "Launch runs to materialize ${ASSET_KEYS.length} assets" dialog after "Materialize all…"`));
    // Dagster offers only "All partitions" here (daily and monthly roots: no common range).
    await dialog.getByText('All partitions', { exact: true }).waitFor({ timeout: 10_000 })
      .catch(() => fail('the launch dialog does not say "All partitions"'));
    await dialog.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_launch_dialog.png') });
    await dialog.getByRole('button', { name: 'Launch backfill' }).click();
    log('clicked "Launch backfill" in the dialog ("All partitions")');
    const created = page.getByText(/Created backfill [a-z0-9]{8}/).first();
    const notLaunched = page.getByText(/backfill was not launched/i).first();
    await created.or(notLaunched).waitFor({ timeout: 60_000 })
      .catch(() => fail('neither "Created backfill" nor an error within 60 s of "Launch backfill"'));
    if (await notLaunched.isVisible().catch(() => false)) {
      // The UI hides the Python error behind "View error": show it in the failure.
      let detail = '';
      try {
        await page.getByText('View error', { exact: true }).first().click({ timeout: 5_000 });
        detail = (await page.getByRole('dialog').last().innerText({ timeout: 5_000 })).slice(0, 2000);
      } catch {}
      fail(`the UI did not launch the backfill: ${detail || 'no detail'}`);
    }
    const backfillId = (await created.innerText()).match(/Created backfill ([a-z0-9]{8})/)[1];
    log(`UI says: created backfill ${backfillId}`);

    // 4. Follow the toast to the backfill page.
    const backfillUrl = `${BASE}/runs/b/${backfillId}`;
    try {
      await page.getByRole('button', { name: 'View', exact: true })
        .or(page.getByRole('link', { name: 'View', exact: true })).first().click({ timeout: 10_000 });
      await page.waitForURL(new RegExp(`/runs/b/${backfillId}`), { timeout: 20_000 });
    } catch (e) {
      // The toast can vanish before the click lands: open the backfill page directly.
      log(`toast's "View" not usable (${String(e).split('\n')[0]}); opening ${backfillUrl}`);
      await page.goto(backfillUrl);
    }
    await page.getByText('Partition selection', { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail(`the backfill page ${page.url()} does not show the backfill`));
    log(`backfill page ${page.url()} shows the backfill`);

    // 5. Wait (bounded) for the daemon to run the backfill: raw sources, the daily batches,
    // the months and the unpartitioned assets, one run at a time. The live page keeps
    // Chromium busy, taking CPU from Spark on a 2-core machine: it idles meanwhile
    // (UI_SMOKE_WATCH=1 keeps it open) and is opened again to read the outcome.
    if (process.env.UI_SMOKE_WATCH !== '1') await page.goto('about:blank');
    const runDeadline = Date.now() + RUN_TIMEOUT_MS;
    let state = await backfillState(backfillId);
    let lastLogged = '';
    while (['REQUESTED', 'CANCELING'].includes(state.status)) {
      const counts = {};
      for (const r of state.runs) counts[r.status] = (counts[r.status] ?? 0) + 1;
      const line = `backfill ${state.status}, runs: ${JSON.stringify(counts)}`;
      if (Date.now() > runDeadline) {
        await page.goto(backfillUrl).catch(() => {});
        await page.waitForTimeout(3000);
        await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_backfill_timeout.png') });
        fail(`backfill ${backfillId} not done after ${RUN_TIMEOUT_MS / 1000}s (${line})`);
      }
      if (line !== lastLogged) log(line);
      lastLogged = line;
      await sleep(2000);
      state = await backfillState(backfillId);
    }
    const runIds = new Set(state.runs.map((r) => r.runId));
    const failedRuns = state.runs.filter((r) => r.status !== 'SUCCESS').map((r) => `${r.runId} ${r.status}`);
    log(`backfill status (GraphQL): ${state.status}, ${state.runs.length} runs`);
    if (state.status !== 'COMPLETED_SUCCESS' || failedRuns.length) {
      await page.goto(backfillUrl);
      await page.waitForTimeout(3000);
      await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_backfill_failed.png') });
      fail(`backfill ${backfillId} ended ${state.status}; runs not successful: ${failedRuns.join(', ') || 'none'}`);
    }

    // 6. The UI must say the same: "Succeeded", every asset 100% completed.
    await shots.setViewportSize(ASSET_PAGE_VIEWPORT);
    await shots.goto(backfillUrl);
    await shots.getByText('Succeeded', { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail('GraphQL says COMPLETED_SUCCESS but the backfill page does not show "Succeeded"'));
    await shots.getByText('100% completed').nth(ASSET_KEYS.length - 1).waitFor({ timeout: 30_000 })
      .catch(() => fail(`the backfill page does not show "100% completed" for all ${ASSET_KEYS.length} assets`));
    for (const key of ASSET_KEYS) {
      await shots.getByText(key.split('/').join(' / '), { exact: true }).first().waitFor({ timeout: 10_000 })
        .catch(() => fail(`the backfill page does not list ${key}`));
    }
    await shots.mouse.move(5, 5);
    await shots.waitForTimeout(1000);
    await shots.screenshot({ path: path.join(SHOT_DIR, 'backfill.png') });
    log(`backfill page shows "Succeeded", 100% completed for all ${ASSET_KEYS.length} assets; screenshot backfill.png`);
    await shots.setViewportSize(VIEWPORT);

    // 7. Second source of truth (GraphQL): every partition materialized, none failed, and
    // every unpartitioned asset's latest materialization from a run of this backfill.
    const after = await assetStates();
    const problems = [];
    for (const key of ASSET_KEYS) {
      const { runId, stats } = after.get(key);
      if (key in PARTITIONS) {
        const want = PARTITIONS[key];
        if (!stats || stats.numPartitions !== want || stats.numMaterialized !== want || stats.numFailed !== 0) {
          problems.push(`${key}: partitions ${JSON.stringify(stats)}, expected ${want} materialized`);
        }
      } else if (!runIds.has(runId)) {
        problems.push(`${key}: latest materialization from run ${runId}, not from backfill ${backfillId}`);
      }
    }
    if (problems.length) fail(`after the backfill:\n  ${problems.join('\n  ')}`);
    log(`GraphQL: all ${ASSET_KEYS.length} assets materialized by backfill ${backfillId} `
      + `(${Object.entries(PARTITIONS).map(([k, n]) => `${k}: ${n}/${n} partitions`).join(', ')})`);

    // 8. The asset page: latest partition, row count, schema, Delta version, preview.
    await screenshotAssetPage(shots, path.join(SHOT_DIR, 'asset_metadata.png'));

    // 9. The daily partitions of staging/orders, all materialized.
    await screenshotPartitions(shots, path.join(SHOT_DIR, 'asset_partitions.png'));

    // 10. The graph again, now that every asset is materialized.
    await screenshotGraph(shots, path.join(SHOT_DIR, 'asset_graph_materialized.png'));
    await shots.goto('about:blank');

    // 11-14: a failing data test blocks a bad write and shows in the UI; checks run on their own.
    const checks = await dataTestSteps(page, shots, runIds);

    log(`PASS: backfill ${backfillId} (${state.runs.length} runs) materialized all ${ASSET_KEYS.length} assets from the UI; `
      + `data test ${CHECK_NAME} blocked the duplicate (run ${checks.badRunId.slice(0, 8)} failed, ${CHECK_ASSET} unchanged) `
      + `and passed when run on its own from the Checks tab (run ${checks.checkRunId.slice(0, 8)})`);
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
