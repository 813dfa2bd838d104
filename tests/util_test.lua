local util = require("claude.util")

return {
  display = function()
    for _, c in ipairs({
      { "plain stays", "cat README.md", nil, "cat README.md" },
      { "newline shown", "a\nb", nil, "a⏎b" },
      { "CR shown, LF a mark (as the host's display.Line)", "a\r\nb", nil, "a^M⏎b" },
      { "escape and bell in caret notation", "x\27[2Jy\7", nil, "x^[[2Jy^G" },
      { "DEL", "a\127b", nil, "a^?b" },
      { "tab is a space", "a\tb", nil, "a b" },
      { "C1 control", "a\194\155b", nil, "a<U+9B>b" },
      { "bidi override", "a\226\128\174b", nil, "a<U+202E>b" },
      { "line separator", "a\226\128\168b", nil, "a<U+2028>b" },
      { "wide text kept", "héllo ✻ 日本", nil, "héllo ✻ 日本" },
      { "cap with ellipsis", "abcdefgh", 5, "abcd…" },
      { "exactly the cap", "abcde", 5, "abcde" },
      { "cap counts characters", "日本語テキスト", 3, "日本…" },
      { "nil is empty", nil, nil, "" },
    }) do
      t.eq(c[4], util.display(c[2], c[3]), c[1])
    end
  end,
}
