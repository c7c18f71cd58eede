-- Headless Neovim (0.7+) against the real sbatch-lsp (tests/test_real_editors.py).
-- nvim --headless --clean -n -u init.lua FILE ; env: SBATCH_LSP_PYTHON (interpreter with
-- sbatch_lsp), SBATCH_CODE (a rule code to fix), SBATCH_ACTION (the quick fix's title).
-- stdout: DIAG lines, ACTION lines, AFTER lines (diagnostics once the fixed one is gone), the fixed text
-- between TEXT-BEGIN and TEXT-END. Exit 0 on success.
local py = os.getenv("SBATCH_LSP_PYTHON") or "python3"
local code, wanted = os.getenv("SBATCH_CODE"), os.getenv("SBATCH_ACTION")
local function out(s) io.stdout:write(s .. "\n") end
local function finish(n) io.stdout:flush(); vim.cmd(n == 0 and "qa!" or ("cq " .. n)) end

local function lsp_code(d)
  return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
end

local function main()
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = "sh"
  local cfg = { name = "sbatch-lsp", cmd = { py, "-m", "sbatch_lsp.server" },
                root_dir = vim.fn.expand("%:p:h") }
  local id
  if vim.lsp.start then id = vim.lsp.start(cfg) else
    id = vim.lsp.start_client(cfg); vim.lsp.buf_attach_client(bufnr, id) end
  if not vim.wait(60000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50) then
    out("TIMEOUT: no diagnostics"); return finish(2) end
  local target
  local function count()
    local n = 0
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if lsp_code(d) == code then n = n + 1 end
    end
    return n
  end
  local before = count()
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    out(string.format("DIAG %d:%d %s %s", d.lnum + 1, d.col + 1, tostring(lsp_code(d)), d.message))
    if lsp_code(d) == code and target == nil then target = d end
  end
  if target == nil then out("NO " .. code); return finish(3) end
  local range = { start = { line = target.lnum, character = target.col },
                  ["end"] = { line = target.end_lnum, character = target.end_col } }
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, range = range,
    context = { diagnostics = { { range = range, message = target.message,
      severity = target.severity, code = lsp_code(target), source = target.source } } } }
  local res = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 30000) or {}
  local chosen
  for _, r in pairs(res) do
    for _, a in ipairs(r.result or {}) do
      out("ACTION " .. a.title)
      if a.title == wanted then chosen = a end
    end
  end
  if chosen == nil then out("NO ACTION " .. wanted); return finish(4) end
  local client = vim.lsp.get_client_by_id(id)
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding or "utf-16")
  -- the fixed finding goes (others of the same rule may stay)
  local gone = vim.wait(60000, function() return count() < before end, 50)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    out(string.format("AFTER %d:%d %s", d.lnum + 1, d.col + 1, tostring(lsp_code(d))))
  end
  out("TEXT-BEGIN")
  for _, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do out(l) end
  out("TEXT-END")
  vim.lsp.stop_client(id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
  finish(gone and 0 or 5)
end
vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = main })
