// UI smoke test: a real headless Chromium drives the Dagster UI of the demo code location.
//
//   node scripts/ui_smoke.mjs <dagster url> <screenshot dir>
//
// Normally started by scripts/ui_smoke.sh, which installs Chromium and playwright-core,
// starts `dagster dev` on a throwaway DAGSTER_HOME and lake, and stops it afterwards.
//
// Steps, as a new user does them: the code location's Assets page lists all 13 materializable
// demo asset keys and the external landing/payments; the global asset lineage graph is
// screenshotted (asset_graph.png); "Materialize all (13)…" is clicked: the demo has
// partitioned assets (daily staging/orders, staging/payments and
// analytics/payment_reconciliation, monthly analytics/monthly_revenue), so Dagster opens its
// "Launch runs to materialize 13 assets" dialog; staging/payments being the only partitioned
// root, it shows a range picker with nothing selected: "All" is clicked (the range
// [2024-01-01...2024-03-31]), then "Launch backfill"; the toast's "View" opens the backfill page; the backfill
// is followed (bounded) until it completes, the daemon running it as batch runs one at a
// time (scripts/dagster.yaml); the backfill page must say "Succeeded" for every asset
// (backfill.png) and GraphQL, the second source of truth, must report every partition
// materialized and every unpartitioned asset materialized by a run of this backfill. Then
// the asset page of analytics/monthly_revenue with its latest partition's metadata
// (asset_metadata.png), analytics/customer_revenue's column descriptions and column-lineage
// table (asset_lineage.png), the partitions of staging/orders (asset_partitions.png) and the
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
// Then the automation: GraphQL must report the schedule analytics__dim_customer_schedule
// RUNNING with cron "0 2 * * *" and a future next tick, and the sensors
// assetlake_automation_sensor and assetlake_watch_external_tables RUNNING; the Automation
// page must list the three with their switches on (automation.png) and the jobs page every
// group job. Finally, without a click, `assetlake demo land` appends a day to the external
// landing table: within UI_SMOKE_STEP_TIMEOUT_S the watch sensor must run staging/payments
// for exactly that day and then the automation sensor analytics/payment_reconciliation for
// that day, both succeeding, with no other run and no other partition of either materialized;
// landing/payments' data version must be the table's new Delta version and staging/payments
// of that day not stale. The runs page is screenshotted (landing_runs.png).
//
// Playwright uses the system Chromium (/usr/bin/chromium, or $CHROMIUM_PATH); it never
// downloads a browser. Every request that is not to the Dagster server is aborted.
//
// Environment: UI_SMOKE_RUN_TIMEOUT_S (the backfill's time limit, default 900: the two 91-day payments batches added minutes),
// UI_SMOKE_STEP_TIMEOUT_S (the time limit of each later single run and of the landing flow,
// default 600),
// UI_SMOKE_DEBUG_DIR (failure screenshots go there; default: the screenshot dir),
// UI_SMOKE_WATCH=1 (keep the live backfill page open while it runs instead of reopening it
// at the end), UI_SMOKE_HEADFUL=1.

import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
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
const RUN_TIMEOUT_MS = Number(process.env.UI_SMOKE_RUN_TIMEOUT_S || 900) * 1000;
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
  'staging/payments',
  'analytics/payment_reconciliation',
  'ref/countries',
];
// The external landing table: listed (group external), observed, never materialized.
const EXTERNAL_KEY = 'landing/payments';
const GROUPS = ['raw', 'customers', 'sales', 'ops', 'payments', 'ref', 'external'];
// The partitioned ones and their partition counts (orders.sql, monthly_revenue.sql,
// payments.sql, payment_reconciliation.sql).
const PARTITIONS = {
  'staging/orders': 91,
  'analytics/monthly_revenue': 3,
  'staging/payments': 91,
  'analytics/payment_reconciliation': 91,
};
// The automation the demo declares (dim_customer.sql's schedule, the two sensors) and its jobs.
const SCHEDULE_NAME = 'analytics__dim_customer_schedule';
const SCHEDULE_CRON = '0 2 * * *';
const SENSOR_NAMES = ['assetlake_automation_sensor', 'assetlake_watch_external_tables'];
const JOB_NAMES = ['customers_job', 'ops_job', 'payments_job', 'raw_job', 'sales_daily_job', 'sales_job',
  'sales_monthly_job', 'analytics__dim_customer_schedule_job'];
// The landing flow: `assetlake demo land` appends a day; the watch sensor runs LANDED_READER
// for that day, then the automation sensor (eager) LANDED_DOWNSTREAM for that day.
const LANDED_READER = 'staging/payments';
const LANDED_DOWNSTREAM = 'analytics/payment_reconciliation';
const REPO_ROOT = path.resolve(here, '..');
const METADATA_ASSET = 'analytics/monthly_revenue';
const LINEAGE_ASSET = 'analytics/customer_revenue';
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

const GRAPH_START_HEIGHT = 1400;
const expandedParam = () =>
  encodeURIComponent(GROUPS.map((g) => `global@global:${g}`).join(','));

/** The global lineage graph with every group expanded, zoomed so nodes show details, centred. */
async function screenshotGraph(page, file) {
  // Dagster draws only the nodes inside the canvas, and its smallest "fit to screen" zoom no
  // longer fits the demo's seven groups in a 900 px window (dim_customer was never drawn):
  // start taller; the window is fitted to the graph below.
  await page.setViewportSize({ width: VIEWPORT.width, height: GRAPH_START_HEIGHT });
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
  // Fit the window to the graph: taller when it overflows, back towards 900 px when not.
  const current = page.viewportSize().height;
  const fitted = Math.min(Math.max(VIEWPORT.height, current + overflow), 2400);
  if (fitted !== current) {
    await page.setViewportSize({ width: VIEWPORT.width, height: fitted });
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

/** An asset page, all of it: latest materialization, row count, columns, metadata; each of `texts` must show. */
async function screenshotAssetPage(page, asset, texts, file) {
  await page.setViewportSize(ASSET_PAGE_VIEWPORT);
  await page.goto(`${BASE}/assets/${asset}`);
  for (const text of ['Latest materialization', 'Row count', 'Columns', 'delta/version', 'assetlake/preview', ...texts]) {
    await page.getByText(text, { exact: true }).first().waitFor({ timeout: 60_000 })
      .catch(() => fail(`"${text}" not shown on the asset page of ${asset}`));
  }
  await page.getByText('refunded').first().waitFor({ timeout: 10_000 }).catch(() => {}); // a preview table
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

/** The code location's repository: its schedules, sensors and jobs (GraphQL). */
async function automationState() {
  const data = await graphql(`{ workspaceOrError { __typename ... on Workspace { locationEntries { name
    locationOrLoadError { __typename ... on RepositoryLocation { repositories { name
      schedules { name cronSchedule executionTimezone scheduleState { status } futureTicks(limit: 1) { results { timestamp } } }
      sensors { name sensorType minIntervalSeconds sensorState { status } }
      jobs { name } } } } } } } }`);
  const entry = data.workspaceOrError.locationEntries.find((e) => e.name === LOCATION);
  const repos = entry?.locationOrLoadError?.repositories ?? [];
  if (repos.length !== 1) fail(`code location ${LOCATION}: ${repos.length} repositories (GraphQL), expected 1`);
  return repos[0];
}

/** 15. The schedule and both sensors RUNNING (GraphQL and /automation, automation.png); the jobs listed. */
async function automationSteps(page, shots) {
  const repo = await automationState();
  const problems = [];
  const schedule = repo.schedules.find((s) => s.name === SCHEDULE_NAME);
  if (!schedule) problems.push(`schedule ${SCHEDULE_NAME} missing (schedules: ${repo.schedules.map((s) => s.name).join(', ') || 'none'})`);
  else {
    if (schedule.cronSchedule !== SCHEDULE_CRON) problems.push(`schedule ${SCHEDULE_NAME}: cron "${schedule.cronSchedule}", expected "${SCHEDULE_CRON}"`);
    if (schedule.scheduleState.status !== 'RUNNING') problems.push(`schedule ${SCHEDULE_NAME}: ${schedule.scheduleState.status}, expected RUNNING`);
    const next = schedule.futureTicks.results[0]?.timestamp;
    if (!next || next * 1000 <= Date.now()) problems.push(`schedule ${SCHEDULE_NAME}: next tick ${next}, expected one in the future`);
    else log(`schedule ${SCHEDULE_NAME}: RUNNING, cron "${schedule.cronSchedule}" ${schedule.executionTimezone ?? ''}, next tick ${new Date(next * 1000).toISOString()}`);
  }
  for (const name of SENSOR_NAMES) {
    const sensor = repo.sensors.find((s) => s.name === name);
    if (!sensor) problems.push(`sensor ${name} missing (sensors: ${repo.sensors.map((s) => s.name).join(', ') || 'none'})`);
    else if (sensor.sensorState.status !== 'RUNNING') problems.push(`sensor ${name}: ${sensor.sensorState.status}, expected RUNNING`);
    else log(`sensor ${name}: RUNNING (${sensor.sensorType}, every ${sensor.minIntervalSeconds}s)`);
  }
  const jobs = repo.jobs.map((j) => j.name);
  const missingJobs = JOB_NAMES.filter((j) => !jobs.includes(j));
  if (missingJobs.length) problems.push(`jobs missing: ${missingJobs.join(', ')} (jobs: ${jobs.join(', ')})`);
  if (problems.length) fail(`automation (GraphQL):\n  ${problems.join('\n  ')}`);

  // The Automation page: the schedule and the two sensors, each with its switch on.
  await shots.goto(`${BASE}/automation`);
  for (const name of [SCHEDULE_NAME, ...SENSOR_NAMES]) {
    // The page's rows are virtualized divs (a selection checkbox, the name, ..., the switch):
    // the row is the name's nearest ancestor holding a checkbox, its switch the last one.
    const label = shots.getByText(name, { exact: true }).first();
    await label.waitFor({ timeout: 60_000 }).catch(() => fail(`/automation does not list ${name}`));
    const row = label.locator('xpath=ancestor::*[.//input[@type="checkbox"]][1]');
    await row.locator('input[type=checkbox]').first().waitFor({ state: 'attached', timeout: 10_000 })
      .catch(() => fail(`/automation: no switch in the row of ${name}`));
    // The switch is on once the instigator's state has loaded (nobody ticks a row's selection box).
    const on = await row.locator('input[type=checkbox]:checked').first().waitFor({ state: 'attached', timeout: 20_000 })
      .then(() => true, () => false);
    if (!on) {
      await shots.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_automation.png') }).catch(() => {});
      const html = await row.evaluate((el) => el.outerHTML).catch(() => '?');
      fail(`/automation: the switch of ${name} is off (row: ${html.slice(0, 1500)})`);
    }
  }
  await shots.getByText('Scheduled At 02:00 AM UTC').or(shots.getByText(/02:00 AM UTC/)).first().waitFor({ timeout: 10_000 })
    .catch(() => fail('/automation does not show the schedule\'s "02:00 AM UTC"'));
  await shots.mouse.move(5, 5);
  await shots.waitForTimeout(1000);
  await shots.screenshot({ path: path.join(SHOT_DIR, 'automation.png') });
  log(`/automation lists ${SCHEDULE_NAME} and ${SENSOR_NAMES.join(', ')}, switches on; screenshot automation.png`);

  // The jobs page lists every group job and the schedule's job.
  await page.goto(`${BASE}/locations/${LOCATION}/jobs`);
  for (const job of JOB_NAMES) {
    await page.getByText(job, { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail(`/locations/${LOCATION}/jobs does not list ${job}`));
  }
  log(`/locations/${LOCATION}/jobs lists ${JOB_NAMES.join(', ')}`);
  await page.goto('about:blank');
  await shots.goto('about:blank');
}

/** Runs created at or after `sinceSecs` (creation time, seconds), newest first. */
async function runsSince(sinceSecs) {
  const data = await graphql(
    `query($after: Float) { runsOrError(filter: { createdAfter: $after }, limit: 100) { __typename
      ... on Runs { results { runId status creationTime startTime endTime tags { key value } assetSelection { path } } }
      ... on PythonError { message } } }`,
    { after: sinceSecs },
  );
  const r = data.runsOrError;
  if (r.__typename !== 'Runs') fail(`runs: ${r.__typename} ${r.message ?? ''}`);
  return r.results.filter((x) => x.creationTime >= sinceSecs);
}

const tagOf = (run, key) => run.tags.find((t) => t.key === key)?.value;
const runAssets = (run) => (run.assetSelection ?? []).map((k) => k.path.join('/')).sort().join(', ');

/** Materializations of `key` recorded after `sinceMs`: [{ partition, runId }]. */
async function materializationsSince(key, sinceMs) {
  const data = await graphql(
    `query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode {
      assetMaterializations(limit: 400) { partition runId timestamp } } } }`,
    { key: { path: key.split('/') } },
  );
  const node = data.assetNodeOrError;
  if (node.__typename !== 'AssetNode') fail(`asset ${key}: ${node.__typename}`);
  return node.assetMaterializations.filter((m) => Number(m.timestamp) >= sinceMs);
}

/** The latest version in a local Delta table's _delta_log (NNN.json). */
function deltaVersion(tablePath) {
  const dir = path.join(tablePath.replace(/^file:(\/\/)?/, ''), '_delta_log');
  const versions = readdirSync(dir).map((f) => f.match(/^(\d{20})\.json$/)).filter(Boolean).map((m) => Number(m[1]));
  if (!versions.length) fail(`no commits in ${dir}`);
  return Math.max(...versions);
}

/**
 * 16. The landing flow, without a click: `assetlake demo land` appends a day to the external
 * table; the watch sensor must run LANDED_READER for that day, then the automation sensor
 * LANDED_DOWNSTREAM for that day, and nothing else; the external asset's data version is the
 * table's new Delta version and the reader's partition is not stale. landing_runs.png.
 */
async function landingSteps(page, shots) {
  const landStart = Date.now();
  const cli = path.join(REPO_ROOT, '.venv', 'bin', 'assetlake');
  // The environment ui_smoke.sh exported (the throwaway lake, its warm engine) is inherited.
  const out = await new Promise((resolve, reject) => {
    execFile(cli, ['demo', 'land'], { cwd: REPO_ROOT, timeout: STEP_TIMEOUT_MS }, (err, stdout, stderr) => {
      if (err) reject(new SmokeFailure(`assetlake demo land failed (${err.code ?? err.signal}): ${(stderr || stdout || err.message).slice(0, 1500)}`));
      else resolve(stdout);
    });
  });
  const m = out.match(/landed (\d+) payments of (\d{4}-\d{2}-\d{2}) in (\S+) \(one Delta commit, version (\d+)\) at (\S+)/);
  if (!m) fail(`assetlake demo land: unexpected output ${JSON.stringify(out.slice(0, 500))}`);
  const [, rows, day, table, landedVersion, tablePath] = m;
  const landSecs = ((Date.now() - landStart) / 1000).toFixed(1);
  const version = Number(landedVersion);
  // On a local lake, the log on disk must say the same (a bucket's is read by the product).
  if (!/^[a-z][a-z0-9+.-]*:\/\//.test(tablePath.replace(/^file:\/\//, ''))) {
    const onDisk = deltaVersion(tablePath);
    if (onDisk !== version) fail(`assetlake demo land said version ${version}, the log at ${tablePath} says ${onDisk}`);
  }
  log(`assetlake demo land: ${rows} payments of ${day} in ${table}, Delta version ${version} (${landSecs}s)`);

  // Wait (bounded) for the two runs the sensors must start, polling GraphQL.
  const sinceSecs = landStart / 1000;
  const deadline = landStart + STEP_TIMEOUT_MS;
  const isWatchRun = (r) => tagOf(r, 'dagster/sensor_name') === 'assetlake_watch_external_tables';
  const isAutoRun = (r) => tagOf(r, 'dagster/sensor_name') === 'assetlake_automation_sensor';
  let watchRun = null;
  let autoRun = null;
  let lastLine = '';
  for (;;) {
    const runs = await runsSince(sinceSecs);
    watchRun = runs.filter(isWatchRun).at(-1) ?? null;
    autoRun = runs.filter(isAutoRun).at(-1) ?? null;
    const desc = (r) => (r ? `${r.runId.slice(0, 8)} ${r.status} [${runAssets(r)}] partition ${tagOf(r, 'dagster/partition')}` : 'none yet');
    const line = `landing ${day}: watch run ${desc(watchRun)}; automation run ${desc(autoRun)}; ${runs.length} runs since landing`;
    if (line !== lastLine) log(line);
    lastLine = line;
    for (const r of [watchRun, autoRun]) {
      if (r && ['FAILURE', 'CANCELED'].includes(r.status)) {
        const { failures } = await runOutcome(r.runId);
        fail(`landing ${day}: run ${r.runId} [${runAssets(r)}] ended ${r.status}: ${failures.map((f) => `${f.stepKey}: ${f.message}`).join(' | ').slice(0, 1500)}`);
      }
    }
    if (watchRun?.status === 'SUCCESS' && autoRun?.status === 'SUCCESS') break;
    if (Date.now() > deadline) {
      await page.goto(`${BASE}/runs`).catch(() => {});
      await page.waitForTimeout(3000);
      await page.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_landing_timeout.png') }).catch(() => {});
      fail(`landing ${day}: not done after ${STEP_TIMEOUT_MS / 1000}s (${line})`);
    }
    await sleep(1500);
  }

  // The runs: exactly these two, for exactly that day.
  const problems = [];
  const runs = await runsSince(sinceSecs);
  if (runAssets(watchRun) !== LANDED_READER) problems.push(`watch run ${watchRun.runId}: assets [${runAssets(watchRun)}], expected [${LANDED_READER}]`);
  if (tagOf(watchRun, 'dagster/partition') !== day) problems.push(`watch run ${watchRun.runId}: partition ${tagOf(watchRun, 'dagster/partition')}, expected ${day}`);
  const watchTag = tagOf(watchRun, 'assetlake/watch');
  if (watchTag !== `landing.payments@${version}`) problems.push(`watch run ${watchRun.runId}: tag assetlake/watch=${watchTag}, expected landing.payments@${version}`);
  if (runAssets(autoRun) !== LANDED_DOWNSTREAM) problems.push(`automation run ${autoRun.runId}: assets [${runAssets(autoRun)}], expected [${LANDED_DOWNSTREAM}]`);
  if (tagOf(autoRun, 'dagster/partition') !== day) problems.push(`automation run ${autoRun.runId}: partition ${tagOf(autoRun, 'dagster/partition')}, expected ${day}`);
  if (tagOf(autoRun, 'dagster/from_automation_condition') !== 'true') problems.push(`automation run ${autoRun.runId}: no tag dagster/from_automation_condition=true`);
  if (autoRun.creationTime < watchRun.endTime) problems.push(`automation run ${autoRun.runId} created before the watch run ended`);
  const others = runs.filter((r) => r.runId !== watchRun.runId && r.runId !== autoRun.runId);
  if (others.length) problems.push(`other runs since the landing: ${others.map((r) => `${r.runId.slice(0, 8)} [${runAssets(r)}] ${tagOf(r, 'dagster/partition') ?? ''} ${tagOf(r, 'dagster/sensor_name') ?? ''}`).join('; ')}`);
  // The materializations: one each, of that day, by these runs; no other partition touched.
  for (const [key, run] of [[LANDED_READER, watchRun], [LANDED_DOWNSTREAM, autoRun]]) {
    const mats = await materializationsSince(key, landStart);
    const desc = mats.map((x) => `${x.partition} by ${x.runId.slice(0, 8)}`).join(', ');
    if (mats.length !== 1 || mats[0].partition !== day || mats[0].runId !== run.runId) {
      problems.push(`${key}: materializations since the landing: [${desc}], expected only ${day} by ${run.runId.slice(0, 8)}`);
    }
  }
  // The external asset's data version is the new Delta version; the reader's day is not stale.
  let dataVersion = null;
  let stale = null;
  const dvDeadline = Date.now() + 30_000;
  for (;;) {
    const ext = (await graphql(
      `query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { dataVersion } } }`,
      { key: { path: EXTERNAL_KEY.split('/') } },
    )).assetNodeOrError;
    dataVersion = ext.dataVersion ?? null;
    const reader = (await graphql(
      `query($key: AssetKeyInput!, $p: String) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode {
        staleStatus(partition: $p) staleCauses(partition: $p) { key { path } reason category } } } }`,
      { key: { path: LANDED_READER.split('/') }, p: day },
    )).assetNodeOrError;
    stale = reader;
    if ((dataVersion === String(version) && reader.staleStatus !== 'STALE') || Date.now() > dvDeadline) break;
    await sleep(1500);
  }
  if (dataVersion !== String(version)) problems.push(`${EXTERNAL_KEY}: dataVersion ${JSON.stringify(dataVersion)}, expected "${version}" (the table's Delta version)`);
  if (stale.staleStatus === 'STALE') problems.push(`${LANDED_READER} ${day}: STALE after its run (${JSON.stringify(stale.staleCauses).slice(0, 600)})`);
  if (problems.length) fail(`landing ${day}:\n  ${problems.join('\n  ')}`);
  const secs = (t) => (t - sinceSecs).toFixed(1);
  const timing = {
    day,
    watchSecs: secs(watchRun.endTime),
    autoSecs: secs(autoRun.endTime),
  };
  log(`landing ${day}: watch run ${watchRun.runId.slice(0, 8)} of ${LANDED_READER} created +${secs(watchRun.creationTime)}s, `
    + `succeeded +${timing.watchSecs}s; automation run ${autoRun.runId.slice(0, 8)} of ${LANDED_DOWNSTREAM} created `
    + `+${secs(autoRun.creationTime)}s, succeeded +${timing.autoSecs}s (after \`assetlake demo land\`, which took ${landSecs}s); `
    + `no other runs or partitions; ${EXTERNAL_KEY} data version ${dataVersion}; ${LANDED_READER} ${day} ${stale.staleStatus}`);

  // The runs page: the two sensor runs on top (landing_runs.png).
  await shots.goto(`${BASE}/runs`);
  for (const r of [watchRun, autoRun]) {
    await shots.getByText(r.runId.slice(0, 8), { exact: true }).first().waitFor({ timeout: 30_000 })
      .catch(() => fail(`/runs does not list run ${r.runId.slice(0, 8)}`));
  }
  await shots.mouse.move(5, 5);
  await shots.waitForTimeout(1500);
  await shots.screenshot({ path: path.join(SHOT_DIR, 'landing_runs.png'), clip: { x: 0, y: 0, width: VIEWPORT.width, height: 420 } });
  log('screenshot landing_runs.png');
  await shots.goto('about:blank');
  return timing;
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
    for (const key of [...ASSET_KEYS, EXTERNAL_KEY]) {
      await page.locator(`a[href$="/assets/${key}"]`).first().waitFor({ timeout: 30_000 })
        .catch(() => fail(`asset ${key} is not listed on /locations/${LOCATION}/assets`));
      const text = key.split('/').join(' / ');
      if (!(await page.getByText(text, { exact: true }).first().isVisible())) {
        fail(`asset ${key} ("${text}") is not visible on /locations/${LOCATION}/assets`);
      }
    }
    log(`all ${ASSET_KEYS.length} asset keys and the external ${EXTERNAL_KEY} visible on /locations/${LOCATION}/assets`);

    // 2. The global asset lineage graph.
    await screenshotGraph(shots, path.join(SHOT_DIR, 'asset_graph.png'));
    await shots.goto('about:blank'); // idle while the run goes on

    // 3. "Materialize all…": partitioned assets in the selection, so a dialog, not a run.
    await page.goto(`${BASE}/asset-groups`);
    await page.locator('foreignObject', { hasText: 'ops' }).first().waitFor({ timeout: 60_000 });
    await page.waitForFunction(
      () => [...document.querySelectorAll('button')].some((b) => b.innerText.trim().startsWith('Materialize all') && !b.disabled),
    );
    const materializeAll = page.getByRole('button', { name: /Materialize all/ });
    const buttonText = (await materializeAll.innerText()).trim();
    if (!buttonText.includes(`(${ASSET_KEYS.length})`)) {
      fail(`the button reads "${buttonText}", expected "Materialize all (${ASSET_KEYS.length})…"`);
    }
    await materializeAll.click();
    log(`clicked "${buttonText}"`);
    const dialog = page.getByRole('dialog').filter({ hasText: `materialize ${ASSET_KEYS.length} assets` }).last();
    await dialog.waitFor({ timeout: 30_000 })
      .catch(() => fail(`no "Launch runs to materialize ${ASSET_KEYS.length} assets" dialog after "Materialize all…"`));
    // staging/payments is the only partitioned root: Dagster opens its range picker with
    // nothing selected and "Launch backfill" disabled; "All" selects its 91 days.
    const launch = dialog.getByRole('button', { name: 'Launch backfill' });
    const all = dialog.getByRole('button', { name: 'All', exact: true });
    await all.waitFor({ timeout: 10_000 })
      .catch(() => fail('the launch dialog has no "All" button in its partition range picker'));
    await all.click();
    const wantRange = `[${'2024-01-01'}...${'2024-03-31'}]`;
    const rangeOk = await page.waitForFunction(
      (want) => [...document.querySelectorAll('[role=dialog] input, [role=dialog] textarea')].some((i) => i.value.includes(want))
        || [...document.querySelectorAll('[role=dialog]')].some((d) => d.innerText.includes(want)),
      wantRange, { timeout: 10_000 },
    ).then(() => true, () => false);
    if (!rangeOk) {
      await dialog.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_launch_dialog.png') }).catch(() => {});
      fail(`after "All", the launch dialog's range is not ${wantRange}`);
    }
    await page.waitForFunction(
      () => [...document.querySelectorAll('[role=dialog] button')].some((b) => b.innerText.trim() === 'Launch backfill' && !b.disabled),
      null, { timeout: 10_000 },
    ).catch(() => fail(`"Launch backfill" still disabled after "All" selected ${wantRange}`));
    await dialog.screenshot({ path: path.join(DEBUG_DIR, 'ui_smoke_launch_dialog.png') });
    await launch.click();
    log(`clicked "All" (${wantRange}) and "Launch backfill" in the dialog`);
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
    // '2024-03-01': the latest materialization is of the last month's partition.
    await screenshotAssetPage(shots, METADATA_ASSET, ['2024-03-01', 'revenue'], path.join(SHOT_DIR, 'asset_metadata.png'));
    // Column descriptions (from '-- column' lines) in the column table, and the lineage table.
    await screenshotAssetPage(shots, LINEAGE_ASSET, [
      "Sum of the customer's paid order amounts; 0 without any", 'assetlake/column_lineage', 'assetlake/columns_read',
      'staging.orders.amount', 'analytics.customers.tier',
    ], path.join(SHOT_DIR, 'asset_lineage.png'));

    // 9. The daily partitions of staging/orders, all materialized.
    await screenshotPartitions(shots, path.join(SHOT_DIR, 'asset_partitions.png'));

    // 10. The graph again, now that every asset is materialized.
    await screenshotGraph(shots, path.join(SHOT_DIR, 'asset_graph_materialized.png'));
    await shots.goto('about:blank');

    // 11-14: a failing data test blocks a bad write and shows in the UI; checks run on their own.
    const checks = await dataTestSteps(page, shots, runIds);

    // 15. The automation: the schedule and both sensors running, the jobs listed.
    await automationSteps(page, shots);

    // 16. A day lands in the external table: the sensors run it, nobody clicks.
    const landed = await landingSteps(page, shots);

    log(`PASS: backfill ${backfillId} (${state.runs.length} runs) materialized all ${ASSET_KEYS.length} assets from the UI; `
      + `data test ${CHECK_NAME} blocked the duplicate (run ${checks.badRunId.slice(0, 8)} failed, ${CHECK_ASSET} unchanged) `
      + `and passed when run on its own from the Checks tab (run ${checks.checkRunId.slice(0, 8)}); `
      + `schedule ${SCHEDULE_NAME} and ${SENSOR_NAMES.length} sensors running; the landed day ${landed.day} `
      + `ran ${LANDED_READER} (${landed.watchSecs}s) and ${LANDED_DOWNSTREAM} (${landed.autoSecs}s) without a click`);
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
