-- claude.diagnostics (being built).
local M = {}

function M.attach() end

function M.detach() end

return M
