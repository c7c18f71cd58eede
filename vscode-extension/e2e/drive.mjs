// Drives a running code-server (real VS Code in a browser) with Debian's Chromium: opens a job
// script, waits for the sbatch-lsp finding in the Problems panel, applies its quick fix through
// the UI and waits for the finding to go. Screenshots: <out>/{problems,quickfix,fixed,failure}.png.
//
// usage: node drive.mjs '<json>'  with keys
//   url, folder (absolute workspace path), file (name to open), problem (text of the Problems
//   row), fix (quick-fix title), fixedText (editor text expected after the fix),
//   keep (text of a Problems row that must stay), keepSeverity (its icon: error, warning, info),
//   restart (run the restart command, undo the fix, see the finding back),
//   out (screenshot directory); or, instead of problem/fix/..., notification (text of the
//   notification the extension must show: when it cannot start a server); or, for a job log,
//   triage (text the "Triage this log" report must show) with problem (the root line's row),
//   cascade (text of an information row) and language (the status bar's language name); or,
//   for the live check, live (text of the Problems row the "Ask the cluster" command must add)
// CHROMIUM overrides the browser binary (default /usr/bin/chromium). Exit code 0 on success.
import { chromium } from "playwright-core";

const o = JSON.parse(process.argv[2]);
const t0 = Date.now();
const log = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
});
let page;  // used by the functions below
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => log("pageerror: " + e.message));
  await page.goto(`${o.url}/?folder=${encodeURIComponent(o.folder)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
  log("workbench loaded");
  // Quick Open: wait for the file's row before Enter (an early Enter does nothing)
  await page.waitForTimeout(1500);
  await page.keyboard.press("Control+P");
  await page.waitForSelector(".quick-input-widget input", { timeout: 45000 });
  await page.keyboard.type(o.file);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: o.file }).first()
    .waitFor({ timeout: 45000 });
  await page.keyboard.press("Enter");
  await page.waitForSelector(".monaco-editor .view-lines", { timeout: 45000 });
  log(`editor open on ${o.file}`);
  // *.sbatch is a shell script for VS Code (the extension's language association)
  const language = o.language || "Shell Script";
  await page.locator(".statusbar-item", { hasText: language }).first()
    .waitFor({ timeout: 30000 });
  log(`language mode: ${language}`);
  if (o.notification) {
    await notification();
  } else if (o.triage) {
    await triage();
  } else if (o.live) {
    await liveCheck();
  } else {
    await quickFix();
  }
} catch (e) {
  log("FAILED: " + e.message);
  if (page) await page.screenshot({ path: `${o.out}/failure.png` }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}

// a command from the palette (F1): type ``typed``, wait for the row titled ``title``, run it
async function runCommand(typed, title) {
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 45000 });
  await page.keyboard.type(typed);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title })
    .first().waitFor({ timeout: 45000 });
  await page.keyboard.press("Enter");
}

// a job log: the root line as an error and the cascade as information in the Problems panel,
// then the "Triage this log" command's report beside it
async function triage() {
  // the root line may be below the fold: the Problems panel shows it wherever it is
  await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: o.problem });
  await row.first().waitFor({ timeout: 90000 });
  await row.first().locator(".marker-icon.error").first().waitFor({ state: "attached", timeout: 15000 });
  log(`Problems panel, error: ${(await row.first().innerText()).replace(/\s+/g, " ")}`);
  const info = page.locator(".markers-panel .monaco-list-row", { hasText: o.cascade });
  await info.first().waitFor({ timeout: 45000 });
  await info.first().locator(".marker-icon.info").first().waitFor({ state: "attached", timeout: 15000 });
  log(`Problems panel, information: ${(await info.first().innerText()).replace(/\s+/g, " ")}`);
  await page.screenshot({ path: `${o.out}/log-problems.png` });
  await page.locator(".monaco-editor .view-lines").first().click();
  await runCommand("sbatch-lsp: Triage", "Triage this log");
  log("triage command run");
  await page.locator(".monaco-editor .view-lines", { hasText: o.triage }).first()
    .waitFor({ timeout: 60000 });
  log(`report opened: '${o.triage}'`);
  await page.screenshot({ path: `${o.out}/triage-report.png` });
}

// the "Ask the cluster (sbatch --test-only)" command: its answer as an error in the Problems panel
async function liveCheck() {
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: o.live });
  await page.waitForTimeout(1000);
  if (await row.count()) throw new Error(`'${o.live}' listed before the command ran`);
  await page.locator(".monaco-editor .view-lines").first().click();
  await runCommand("sbatch-lsp: Ask", "Ask the cluster");
  log("live check command run");
  await row.first().waitFor({ timeout: 60000 });
  await row.first().locator(".marker-icon.error").first().waitFor({ state: "attached", timeout: 15000 });
  log(`Problems panel, error: ${(await row.first().innerText()).replace(/\s+/g, " ")}`);
  await page.screenshot({ path: `${o.out}/live-problem.png` });
}

// the extension's message when it cannot start a server
async function notification() {
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: o.notification });
  await toast.first().waitFor({ timeout: 60000 });
  log(`notification: ${(await toast.first().innerText()).replace(/\s+/g, " ")}`);
  await page.screenshot({ path: `${o.out}/notification.png` });
}

// the finding in the Problems panel, its quick fix through the UI, the finding gone
async function quickFix() {
  await page.waitForSelector(".monaco-editor .squiggly-error", { timeout: 90000 });
  log("error squiggle rendered");
  await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: o.problem });
  await row.first().waitFor({ timeout: 30000 });
  await page.waitForTimeout(1000); // a duplicate report (push and pull) would show up by now
  const rows = await row.count();
  log(`Problems panel: ${rows} row(s): ${(await row.first().innerText()).replace(/\s+/g, " ")}`);
  if (rows !== 1) throw new Error(`expected one Problems row for '${o.problem}', got ${rows}`);
  await page.screenshot({ path: `${o.out}/problems.png` });
  // the quick fix through the UI: select the row, Ctrl+. opens its fixes
  await row.first().click();
  await page.waitForTimeout(500);
  await page.keyboard.press("Control+Period");
  const fix = page.getByText(o.fix);  // the server may add "(unsafe fix)"
  await fix.first().waitFor({ timeout: 45000 });
  log(`quick-fix menu offers '${o.fix}'`);
  await page.screenshot({ path: `${o.out}/quickfix.png` });
  await fix.first().click();
  await page.locator(".monaco-editor .view-lines", { hasText: o.fixedText }).first()
    .waitFor({ timeout: 45000 });
  log("fix applied to the editor text");
  await row.first().waitFor({ state: "detached", timeout: 30000 });
  log("finding gone from the Problems panel");
  if (o.keep) {
    const kept = page.locator(".markers-panel .monaco-list-row", { hasText: o.keep }).first();
    await kept.waitFor({ timeout: 45000 });
    log(`other finding still listed: '${o.keep}'`);
    if (o.keepSeverity) {  // set by an editor setting (sbatchLsp.severity)
      // the row's severity icon (a light bulb stands in front of it while the row has fixes)
      await kept.locator(`.marker-icon.${o.keepSeverity}`).first()
        .waitFor({ state: "attached", timeout: 15000 });
      log(`... as ${o.keepSeverity}`);
    }
  }
  await page.screenshot({ path: `${o.out}/fixed.png` });
  if (o.restart) {  // the extension's restart command, then the new server at work
    await runCommand("sbatch-lsp: Restart", "Restart the language server");
    log("restart command run");
    await page.waitForTimeout(1000);
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Z");
    await row.first().waitFor({ timeout: 60000 });
    log("after the restart, undoing the fix brings the finding back");
    await page.screenshot({ path: `${o.out}/restarted.png` });
  }
  log("screenshots written");
}
