// The VS Code client of sbatch-lsp: finds the server, starts it over stdio, passes the editor
// settings on, and offers a restart command and an output channel. The server does the work
// (diagnostics, quick fixes, hover, completion, inlay hints) and ignores shell scripts that are
// not job scripts, so every `shellscript` document is served. Slurm job logs (`slurm-*.out`,
// `*.err`: the `slurm-log` language; `*.log` files) are served too: the server triages them
// (root line, cascade), and "Triage this log" opens the server's text report beside the log.
// "Ask the cluster (sbatch --test-only)" runs the server's live check on the active job script
// (only when invoked: the #! line and the #SBATCH block go to the controller, nothing is
// submitted) and shows the controller's answer as a problem on the file until it is edited.
import { execFile } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

const SECTION = "sbatchLsp";
const MODULE = "sbatch_lsp.server";
const TRIAGE_COMMAND = "sbatch-lsp.triage"; // the server's command (sbatch_lsp/server/logs.py)
const LIVE_COMMAND = "sbatch-lsp.liveCheck"; // the server's command (sbatch_lsp/server/live.py)
const INSTALL_HINT =
  "sbatch-lsp is not on a package index: install it from a clone of its repository with " +
  "`pipx install .` (or `python3 -m pip install .` in a virtual environment), then set " +
  "\"sbatchLsp.server.path\" to its sbatch-lsp executable, or \"sbatchLsp.server.interpreter\" " +
  "to the Python that has it.";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let live: vscode.DiagnosticCollection;

/** A finding in the CLI's JSON shape (1-based lines, columns in code points). */
interface Finding {
  code: string;
  severity: "error" | "warning" | "info" | "hint";
  message: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
}

/** How the server is started, and why that command was chosen (for the output channel). */
interface ServerCommand {
  command: string;
  args: string[];
  origin: string;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("sbatch-lsp");
  live = vscode.languages.createDiagnosticCollection("sbatch-lint live");
  context.subscriptions.push(
    output,
    live,
    vscode.commands.registerCommand("sbatchLsp.liveCheck", liveCheck),
    vscode.workspace.onDidChangeTextDocument((event) => live.delete(event.document.uri)),
    vscode.commands.registerCommand("sbatchLsp.restartServer", restart),
    vscode.commands.registerCommand("sbatchLsp.showOutput", () => output.show(true)),
    vscode.commands.registerCommand("sbatchLsp.triageLog", triageLog),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        await restart();
      } else if (event.affectsConfiguration(SECTION) && client?.isRunning()) {
        await client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: lintSettings(),
        });
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await stop();
}

/** The server's triage report of the active log, opened as a text document beside it. */
async function triageLog(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    await vscode.window.showInformationMessage("sbatch-lsp: open a job's log to triage it.");
    return;
  }
  if (!client?.isRunning()) {
    await vscode.window.showErrorMessage("sbatch-lsp: the server is not running.", "Show Output")
      .then((choice) => choice && output.show(true));
    return;
  }
  const report = await client.sendRequest(ExecuteCommandRequest.type, {
    command: TRIAGE_COMMAND,
    arguments: [editor.document.uri.toString()],
  });
  const doc = await vscode.workspace.openTextDocument({
    content: typeof report === "string" ? report : "sbatch-lint triage: no report",
    language: "plaintext",
  });
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
}

/** The server's live check of the active job script: the controller's answer as a problem on
 * the file (until the next edit) and as a message. */
async function liveCheck(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    await vscode.window.showInformationMessage("sbatch-lsp: open a job script to ask the cluster.");
    return;
  }
  if (!client?.isRunning()) {
    await vscode.window.showErrorMessage("sbatch-lsp: the server is not running.", "Show Output")
      .then((choice) => choice && output.show(true));
    return;
  }
  const doc = editor.document;
  const answer = (await client.sendRequest(ExecuteCommandRequest.type, {
    command: LIVE_COMMAND,
    arguments: [doc.uri.toString()],
  })) as { finding?: Finding; error?: string } | null;
  const f = answer?.finding;
  if (!f) {
    await vscode.window.showErrorMessage(`sbatch-lsp: live check: ${answer?.error ?? "no answer"}`);
    return;
  }
  const position = (line: number, column: number) => {
    const text = doc.lineAt(Math.min(Math.max(line - 1, 0), doc.lineCount - 1)).text;
    // code points (the CLI's columns) to UTF-16 units (VS Code's)
    return new vscode.Position(line - 1, Array.from(text).slice(0, column - 1).join("").length);
  };
  const diagnostic = new vscode.Diagnostic(
    new vscode.Range(position(f.line, f.column), position(f.end_line, f.end_column)), f.message,
    f.severity === "error" ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Information);
  diagnostic.code = f.code;
  diagnostic.source = "sbatch-lint --live";
  live.set(doc.uri, [diagnostic]);
  const text = `sbatch-lsp: ${f.message} (line ${f.line})`;
  if (f.severity === "error") {
    await vscode.window.showErrorMessage(text);
  } else {
    await vscode.window.showInformationMessage(text);
  }
}

async function restart(): Promise<void> {
  output.appendLine("Restarting the server.");
  await stop();
  await start();
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) {
    try {
      await running.stop(5000);
    } catch (err) {
      output.appendLine(`Stopping the server: ${String(err)}`);
    }
    await running.dispose(5000).catch(() => undefined);
  }
}

async function start(): Promise<void> {
  const found = await findServer();
  if (typeof found === "string") {
    output.appendLine(found);
    const choice = await vscode.window.showErrorMessage(
      `sbatch-lsp: ${found.split("\n")[0]} ${INSTALL_HINT}`, "Open Settings", "Show Output");
    if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server`);
    } else if (choice === "Show Output") {
      output.show(true);
    }
    return;
  }
  output.appendLine(`Starting ${[found.command, ...found.args].join(" ")} (${found.origin}).`);
  const serverOptions: ServerOptions = {
    command: found.command,
    args: found.args,
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "shellscript" },
      { scheme: "untitled", language: "shellscript" },
      { scheme: "file", language: "slurm-log" },
      { scheme: "file", language: "log" },
      { scheme: "file", pattern: "**/slurm-*.out" },
    ],
    diagnosticCollectionName: "sbatch-lint",
    initializationOptions: lintSettings(),
    outputChannel: output,
    traceOutputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
  };
  const created = new LanguageClient(SECTION, "sbatch-lsp", serverOptions, clientOptions);
  client = created;
  try {
    await created.start();
  } catch (err) {
    client = undefined;
    output.appendLine(`The server did not start: ${String(err)}`);
    const choice = await vscode.window.showErrorMessage(
      `sbatch-lsp: the server (${found.command}) did not start. See the output for details.`,
      "Show Output");
    if (choice) {
      output.show(true);
    }
  }
}

/** The editor settings the server reads (DESIGN.md "Configuration": the keys of
 * `[tool.sbatch-lint]`, plus `inlayHints`); empty lists and tables are left out so that they
 * mean "not set". A project file still wins on the server's side. */
function lintSettings(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const settings: Record<string, unknown> = {
    inlayHints: cfg.get<boolean>("inlayHints.enable", true),
  };
  const codes = (key: string) =>
    (cfg.get<string[]>(key) ?? []).map((c) => c.trim()).filter((c) => c.length > 0);
  const table = (key: string) =>
    Object.fromEntries(Object.entries(cfg.get<Record<string, unknown>>(key) ?? {})
      .filter(([, v]) => v !== null && v !== undefined && v !== ""));
  for (const [key, name] of [["select", "select"], ["ignore", "ignore"],
                             ["extendSelect", "extend-select"]]) {
    const value = codes(key);
    if (value.length > 0) {
      settings[name] = value;
    }
  }
  for (const key of ["severity", "profile"]) {
    const value = table(key);
    if (Object.keys(value).length > 0) {
      settings[key] = value;
    }
  }
  return settings;
}

/** The server command: the configured executable, else the configured interpreter, else the
 * workspace's `.venv/bin/sbatch-lsp`, `sbatch-lsp` on PATH, or a `python3`/`python` on PATH that
 * can import the server. Returns a message (first line: the problem) when none is usable. */
async function findServer(): Promise<ServerCommand | string> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const extra = cfg.get<string[]>("server.args") ?? [];
  const configured = expandHome(cfg.get<string>("server.path", "").trim());
  if (configured) {
    const resolved = resolveExecutable(configured);
    return resolved
      ? { command: resolved, args: extra, origin: "sbatchLsp.server.path" }
      : `"sbatchLsp.server.path" is "${configured}", which is not an executable file.`;
  }
  const interpreter = expandHome(cfg.get<string>("server.interpreter", "").trim());
  if (interpreter) {
    const resolved = resolveExecutable(interpreter);
    if (!resolved) {
      return `"sbatchLsp.server.interpreter" is "${interpreter}", which is not an executable file.`;
    }
    const problem = await importProblem(resolved);
    return problem === undefined
      ? { command: resolved, args: ["-m", MODULE, ...extra], origin: "sbatchLsp.server.interpreter" }
      : `${resolved} cannot import ${MODULE} ("sbatchLsp.server.interpreter").\n${problem}`;
  }
  const tried: string[] = [];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const candidate = path.join(folder.uri.fsPath, ".venv", "bin", "sbatch-lsp");
    tried.push(candidate);
    if (isExecutable(candidate)) {
      return { command: candidate, args: extra, origin: "the workspace's virtual environment" };
    }
  }
  tried.push("sbatch-lsp on PATH");
  const onPath = resolveExecutable("sbatch-lsp");
  if (onPath) {
    return { command: onPath, args: extra, origin: "PATH" };
  }
  for (const python of ["python3", "python"]) {
    const resolved = resolveExecutable(python);
    if (!resolved) {
      continue;
    }
    tried.push(`${resolved} -m ${MODULE}`);
    if ((await importProblem(resolved)) === undefined) {
      return { command: resolved, args: ["-m", MODULE, ...extra], origin: "python on PATH" };
    }
  }
  return `no sbatch-lsp language server found.\nTried: ${tried.join("; ")}.`;
}

function expandHome(p: string): string {
  return p.startsWith("~/") ? path.join(process.env.HOME ?? "~", p.slice(2)) : p;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** An absolute path for `name`: itself when it holds a path separator, else the first match
 * on PATH; undefined when it is not an executable file. */
function resolveExecutable(name: string): string | undefined {
  if (name.includes("/") || name.includes("\\")) {
    return isExecutable(name) ? path.resolve(name) : undefined;
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

/** undefined when `python` imports the server module, else what it printed. */
function importProblem(python: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(python, ["-c", `import ${MODULE}`], { timeout: 30000 }, (err, _out, stderr) => {
      if (!err) {
        resolve(undefined);
      } else {
        const lines = String(stderr || err.message).trim().split("\n");
        resolve(lines[lines.length - 1]);
      }
    });
  });
}
