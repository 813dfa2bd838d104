// Package sessions is the state of every Claude session this Neovim runs:
// the CLI in the Claude terminal and every chat, each
// `working`, `needs input`, `done`, `idle` or `exited`, since when, with
// its name, project directory, mode and cost where known.
//
// A chat's state comes from its stream (the chat panel reports its status
// and permission requests: ChatEvent). A terminal's comes from the CLI's
// own hooks: the CLI that :ClaudeStart launches gets a settings layer
// (--settings, HookSettings) whose hooks run `nvim-claude hook <event>
// <id>`, which reaches this host over the editor tools' private,
// token-checked socket and calls the HookMethod method; and from the diffs
// the CLI has open (Lua reports them). With the user's hooks disabled only
// the diffs tell. A terminal whose CLI runs on the far side (an SSH host,
// a container: the remote feature) gets the same HTTP hooks to the far
// port (FarSettings), written there by the remote feature; what its hooks
// name are far paths, mapped back through the workspace's mapping, and
// one outside it is never taken as a local one. The terminal's permission prompts and plans can be
// answered from Neovim too: its PermissionRequest hook waits for the
// answer while the CLI shows its own prompt (answer.go).
//
// Every text a session shows (its name, what it waits for, the request it
// is asked to allow: Request) comes from outside and is made displayable
// here, where it enters. The settings layers that carry a user's
// --settings file are private files, removed with their CLI or host, and
// those of a host killed outright by the next host's start.
package sessions

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
)

// The states of a session.
const (
	Working    = "working"     // a turn is running
	NeedsInput = "needs input" // a permission prompt, a pending diff, a question
	Done       = "done"        // the turn ended and the user has not looked
	Idle       = "idle"        // nothing to do
	Exited     = "exited"      // the CLI is gone
)

// The modes of a session.
const (
	ModeTerminal = "terminal"
	ModeChat     = "chat"
)

// DiffWaiting starts what a session waits for when it is a diff (then
// the diff's tab name).
const DiffWaiting = "diff: "

// HookMethod is the JSON-RPC method `nvim-claude hook` calls on the editor
// tools' socket.
const HookMethod = "nvim-claude/hook"

// MaxHookParams bounds a hook call's parameters: the hook command sends a
// digest of the CLI's hook input, never a file's contents; the largest is
// a plan (MaxPlan, each byte escaped in JSON as up to six), within the
// editor tools' socket's message limit.
const MaxHookParams = 6*MaxPlan + 64<<10

// chatRequest is the request of a chat's "permission" event (tool, input,
// description, request_id).
func chatRequest(data map[string]any) *Request {
	tool, _ := data["tool"].(string)
	rid, _ := data["request_id"].(string)
	var raw json.RawMessage
	switch v := data["input"].(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	case string:
		raw = json.RawMessage(v)
	case nil:
	default:
		raw, _ = json.Marshal(v)
	}
	text, desc := RequestText(raw)
	if text == "" || text == "{}" {
		text, _ = data["summary"].(string)
	}
	if desc == "" {
		desc, _ = data["description"].(string)
	}
	text, cut := CutText(text, MaxRequestText*4)
	r := newRequest(tool, text, desc, cut, 0)
	r.RequestID = rid
	return r
}

// HookEvents are the CLI hook events HookSettings registers.
// StopFailure ends a turn that an API error stops (Stop does not fire then).
var HookEvents = []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest", "Notification", "Stop", "StopFailure"}

// Session is one session as Lua lists it.
type Session struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Dir     string  `json:"dir"`
	Mode    string  `json:"mode"`
	State   string  `json:"state"`
	Since   int64   `json:"since"` // unix seconds
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Waiting is what a session in NeedsInput waits for ("Bash", a
	// file name, the CLI's notification text).
	Waiting string `json:"waiting,omitempty"`
	// Request is what a session in NeedsInput is asked to allow, when
	// known (a terminal's PermissionRequest hook, a chat's can_use_tool).
	Request *Request `json:"request,omitempty"`
	// ClaudeSession is the CLI's session id (for --resume), once known.
	ClaudeSession string `json:"claude_session,omitempty"`
	PID           int    `json:"pid,omitempty"`
	// waiting reasons of a NeedsInput state: a diff and a prompt are
	// counted apart, so that closing one does not hide the other.
	diffs  int
	prompt bool
	order  int // creation order, terminals and chats alike
	// used: when the user last used the session (made it the current
	// terminal, typed a prompt to it), as a tick of the feature's clock;
	// among sessions in one tree, the last used gets the selection.
	used int
	// chatReqs are a chat's permission requests not answered yet, oldest
	// first (Request is the first: the one the chat's prompt jumps to).
	chatReqs []*Request
	// edited: when the CLI last started an edit tool (PreToolUse), to
	// tell whose a diff is when several terminals run.
	edited time.Time
	// plan is the plan file a terminal's model last wrote (planCut: cut
	// at MaxPlan): in plan mode its ExitPlanMode carries no plan.
	plan, planCut string
	// placed: a hook has said where the CLI runs (the first one decides:
	// later ones follow its shell's cd).
	placed bool
	// far: the CLI runs on an SSH host or in a container; its hooks'
	// paths are far ones, mapped through the workspace's mapping.
	// farLayer is what its settings layer is made of, once the far port
	// is known (FarSettings); nil: it has no hooks.
	far      bool
	farLayer *farLayer
}

// farLayer is a far terminal's settings layer before it has its port.
type farLayer struct {
	answer bool
	user   string // the user's own --settings JSON ("" none)
}

// waitingFor is what x waits for when a prompt is what says so: an open
// diff says it better (the CLI asks for the edit the diff shows).
func (x *Session) waitingFor(prompt string) string {
	if x.diffs > 0 {
		return x.Waiting
	}
	return prompt
}

// askNotifications are the CLI's notification types that wait for the
// user ("": a CLI that does not tell the type).
var askNotifications = map[string]bool{"": true, "permission_prompt": true, "worker_permission_prompt": true,
	"elicitation_dialog": true, "elicitation_url_dialog": true, "agent_needs_input": true}

// Caps of what a session shows: every such text comes from outside (a
// directory name, the CLI's hook input, a chat's stream, a rename) and is
// made displayable (display.Line) where it enters, so that the panel, the
// notifications and a statusline never get a control character.
const (
	maxName    = 60  // a session's name
	maxTool    = 60  // a tool's name
	maxWaiting = 200 // what a session waits for, on one line
)

// cliSessionID keeps a CLI session id only when it looks like one: it
// becomes the argument of --resume, so it must not be an option.
func cliSessionID(s string) string {
	if s == "" || len(s) > 100 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" || s[0] == '-' || s[0] == '.' {
		return ""
	}
	return s
}

// editTools are the tools whose call opens a diff.
var editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// Sessions is the feature.
type Sessions struct {
	h   host.Host
	log *slog.Logger
	now func() time.Time
	bin func() string // this binary, for the hook commands

	mu    sync.Mutex
	byID  map[string]*Session
	seq   int // sessions made
	tick  int // the clock of Session.used
	terms int // terminal sessions made (their ids: t1, t2 …)
	// diffOwner: the session each open diff of a terminal CLI is for, by
	// the diff's tab name.
	diffOwner map[string]string
	sweepOnce sync.Once
	// private is the 0700 directory of the settings layers that carry a
	// user's --settings file ("" until one is needed); removed by Close.
	private string
	// answers are the terminals' prompts whose hooks wait for Neovim's
	// answer, by request id (answer.go).
	answers   map[string]*pendingAnswer
	answerSeq int
	// hookToken is the key of every session's own token, which its CLI's
	// HTTP hooks show (hookTokenOf; in a header of the settings layer's
	// 0600 file: never on a command line).
	hookToken string
	// far removes a far terminal's settings layer when its CLI ends (nil
	// until SetFar).
	far Far
}

// Far is what the feature needs of the far side (the remote feature).
type Far interface {
	// Forget removes the far settings layer of terminal session id, whose
	// CLI ended; it must not block.
	Forget(id string)
}

// SetFar gives the feature the far side, which holds far terminals'
// settings layers.
func (s *Sessions) SetFar(f Far) {
	s.mu.Lock()
	s.far = f
	s.mu.Unlock()
}

// New makes the feature.
func New(h host.Host) *Sessions {
	return &Sessions{h: h, log: h.Logger().With("feature", "sessions"), now: time.Now, bin: executable,
		byID: map[string]*Session{}, diffOwner: map[string]string{}, answers: map[string]*pendingAnswer{},
		hookToken: uuid.NewString()}
}

// Name names the feature.
func (s *Sessions) Name() string { return "sessions" }

// Hooks are the feature's Lua handlers.
func (s *Sessions) Hooks() host.Hooks {
	return host.Hooks{
		LuaRequests: map[string]host.LuaRequest{
			"sessions.list":     host.Request("sessions.list", s.handleList),
			"sessions.terminal": host.Request("sessions.terminal", s.handleTerminal),
			"sessions.update":   host.Request("sessions.update", s.handleUpdate),
			"sessions.answer":   host.Request("sessions.answer", s.handleAnswer),
			"sessions.plan":     host.Request("sessions.plan", s.handlePlan),
		},
		// the first options come as the host starts
		Options:   func(host.Options) error { s.sweepOnce.Do(s.sweep); return nil },
		Close:     s.Close,
		HTTPHooks: http.HandlerFunc(s.serveHook),
	}
}

// Close removes the settings files the feature wrote, and lets every
// hook that waits for an answer go (the CLIs keep their own prompts).
func (s *Sessions) Close() {
	s.dropAll()
	s.mu.Lock()
	dir := s.private
	s.private = ""
	s.mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// privateFile writes the settings layer of session id to a 0600 file in
// the feature's 0700 directory (whole or not at all) and returns its path.
func (s *Sessions) privateFile(id, content string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == "" {
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", settingsDirPrefix, os.Getpid()))
		if err != nil {
			return "", fmt.Errorf("a private directory for the settings layer: %w", err)
		}
		s.private = dir
	}
	f, err := os.CreateTemp(s.private, id+"-*.tmp")
	if err != nil {
		return "", fmt.Errorf("writing the settings layer: %w", err)
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(s.private, id+".json")
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("writing the settings layer: %w", err)
	}
	return path, nil
}

// settingsDirPrefix names the settings directories in the temporary
// directory: nvim-claude-settings-<host pid>-<random>, so that a later host
// can sweep the directory of a host killed outright.
const settingsDirPrefix = "nvim-claude-settings-"

// sweepSettingsDirs removes, in tmp, the settings directories of hosts
// that are gone (a Neovim and its host killed outright leave theirs, with
// the user's settings in it): only a real directory (not a link) the user
// owns, named by a host that is not self and not alive. It returns what it
// removed.
func sweepSettingsDirs(tmp string, self int, alive func(int) bool, owned func(fs.FileInfo) bool) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmp, settingsDirPrefix+"*"))
	var removed []string
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), settingsDirPrefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || pid <= 0 || pid == self || alive(pid) {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || !owned(fi) {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed
}

// sweep removes the settings layers dead hosts left behind; run once per
// host, when it starts (whether or not it ever writes a layer itself).
func (s *Sessions) sweep() {
	for _, d := range sweepSettingsDirs(os.TempDir(), os.Getpid(), hostAlive, ownedByUser) {
		s.log.Info("removed the settings layer of a host that is gone", "dir", d)
	}
}

// removeFile removes session id's settings file, if any, and the
// directory with the last one (a host killed outright then leaves none).
func (s *Sessions) removeFile(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == "" {
		return
	}
	_ = os.Remove(filepath.Join(s.private, id+".json"))
	if os.Remove(s.private) == nil { // only an empty one goes
		s.private = ""
	}
}

// Methods are the editor tools' socket methods this feature serves (wired
// by app into edtools).
func (s *Sessions) Methods() map[string]mcp.MethodHandler {
	return map[string]mcp.MethodHandler{HookMethod: s.handleHook}
}

func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return "nvim-claude"
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe
}

// List returns every session in the order they started.
func (s *Sessions) List() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Session, 0, len(s.byID))
	for _, x := range s.byID {
		out = append(out, *x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

func (s *Sessions) handleList(context.Context, struct{}) (any, error) {
	return s.List(), nil
}

// terminalParams register the CLI :ClaudeStart is about to launch.
type terminalParams struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// UserSettings is the value of a --settings the user already gives
	// the CLI (a file, relative to Dir, or JSON): the CLI keeps only the
	// last --settings, so ours must carry the user's.
	UserSettings string `json:"user_settings"`
	// Answer: the session's permission prompts can be answered from
	// Neovim (its PermissionRequest hook waits for the answer).
	Answer bool `json:"answer"`
	// Port is the IDE server's, when the hooks are to be HTTP hooks to it
	// (no process per hook); 0: command hooks (`nvim-claude hook`).
	Port int `json:"port"`
	// Far: the CLI runs on the far side (the remote feature starts it).
	// Its layer, with the far port in its URLs, is written there
	// (FarSettings); with Port 0 it has no hooks (a command hook cannot
	// run there). UserSettings is then JSON (a far file cannot be read
	// here).
	Far bool `json:"far"`
}

// TerminalInfo is what Lua needs to launch a terminal session.
type TerminalInfo struct {
	ID string `json:"id"`
	// Settings is the --settings JSON: the hooks that report to this host
	// (over the user's own --settings, when given); "" when the user's
	// could not be read (Warning says why: then the CLI runs without ours).
	Settings string `json:"settings"`
	Warning  string `json:"warning,omitempty"`
}

func (s *Sessions) handleTerminal(_ context.Context, p terminalParams) (any, error) {
	if p.Dir == "" || !filepath.IsAbs(p.Dir) {
		return nil, fmt.Errorf("sessions.terminal: dir must be an absolute path, got %q", p.Dir)
	}
	s.mu.Lock()
	s.seq++
	s.terms++
	id := "t" + strconv.Itoa(s.terms)
	name := p.Name
	if name == "" {
		name = filepath.Base(p.Dir)
	}
	name = s.uniqueNameLocked(display.Line(name, maxName))
	s.tick++
	x := &Session{ID: id, Name: name, Dir: p.Dir, Mode: ModeTerminal, State: Idle, Since: s.now().Unix(), order: s.seq, used: s.tick, far: p.Far}
	s.byID[id] = x
	if p.Far {
		info := TerminalInfo{ID: id}
		user := strings.TrimSpace(p.UserSettings)
		switch {
		case p.Port <= 0:
		case user != "" && !strings.HasPrefix(user, "{"):
			info.Warning = "the session's state comes from its diffs only: your --settings names a file on the far side, which cannot be layered under ours from here (give it as JSON)"
		default:
			x.farLayer = &farLayer{answer: p.Answer, user: user}
		}
		s.mu.Unlock()
		return info, nil
	}
	s.mu.Unlock()
	ours := HookSettings(s.bin(), id, p.Answer)
	if p.Port > 0 {
		ours = HTTPHookSettings(p.Port, id, p.Answer, s.hookTokenOf(id))
	}
	info := TerminalInfo{ID: id, Settings: ours}
	if p.Port > 0 && p.UserSettings == "" {
		// the HTTP hooks carry their token: in a 0600 file, never on the
		// command line every local user can read, nor in the CLI's
		// environment, which every command Claude runs inherits
		if path, err := s.privateFile(id, ours); err == nil {
			info.Settings = path
		} else {
			info.Settings = ""
			info.Warning = "the session's state comes from its diffs only: " + err.Error()
		}
	}
	if p.UserSettings != "" {
		merged, err := LayerSettings(p.UserSettings, p.Dir, ours)
		if err == nil && (p.Port > 0 || !strings.HasPrefix(strings.TrimSpace(p.UserSettings), "{")) {
			// a file's settings (an env with a key …) must not go on
			// the command line, which every local user can read
			merged, err = s.privateFile(id, merged)
		}
		if err != nil {
			info.Settings = ""
			info.Warning = "the session's state comes from its diffs only: " + err.Error()
		} else {
			info.Settings = merged
		}
	}
	return info, nil
}

// FarSettings is the settings layer of far terminal session id: its HTTP
// hooks to the far port farPort (where the far CLI reaches the IDE
// server), with the session's token, over the user's own --settings JSON;
// "" when the session has no hooks. The remote feature writes it to a
// private file on the far side, over the channel's stdin.
func (s *Sessions) FarSettings(id string, farPort int) (string, error) {
	s.mu.Lock()
	x := s.byID[id]
	var fl *farLayer
	if x != nil && x.far && x.State != Exited {
		fl = x.farLayer
	}
	s.mu.Unlock()
	if x == nil || !x.far {
		return "", fmt.Errorf("no far terminal session %q", id)
	}
	if fl == nil || farPort <= 0 {
		return "", nil
	}
	ours := HTTPHookSettings(farPort, id, fl.answer, s.hookTokenOf(id))
	if fl.user == "" {
		return ours, nil
	}
	return LayerSettings(fl.user, "", ours)
}

// uniqueNameLocked is name, or "name #2", "name #3" … when a session
// listed already has it: two terminals started in one directory must not
// both be "Claude (ws)" in a notice. s.mu is held.
func (s *Sessions) uniqueNameLocked(name string) string {
	taken := map[string]bool{}
	for _, x := range s.byID {
		taken[x.Name] = true
	}
	out := name
	for k := 2; taken[out]; k++ {
		// within the cap, or Lua's cut takes the number off again
		suffix := " #" + strconv.Itoa(k)
		out = display.Line(name, maxName-utf8.RuneCountInString(suffix)) + suffix
	}
	return out
}

// LayerSettings is HookSettings over the user's own --settings value
// (JSON, or a file relative to dir): the CLI keeps only the last
// --settings it is given, so the layer we add must hold the user's
// settings, with our hooks after the user's for each event.
func LayerSettings(user, dir, ours string) (string, error) {
	raw := []byte(user)
	if t := strings.TrimSpace(user); !strings.HasPrefix(t, "{") {
		path := user
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("cannot read your --settings: %w", err)
		}
		raw = b
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return "", fmt.Errorf("your --settings %q is not a JSON object", clip(user, 80))
	}
	var layer struct {
		Hooks map[string][]any `json:"hooks"`
	}
	_ = json.Unmarshal([]byte(ours), &layer)
	hooks, ok := doc["hooks"].(map[string]any)
	if doc["hooks"] != nil && !ok {
		return "", errors.New(`the "hooks" of your --settings is not an object`)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	for ev, entries := range layer.Hooks {
		have, ok := hooks[ev].([]any)
		if hooks[ev] != nil && !ok {
			return "", fmt.Errorf("the %q hooks of your --settings are not a list", ev)
		}
		hooks[ev] = append(have, entries...)
	}
	doc["hooks"] = hooks
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("layering your --settings: %w", err)
	}
	return string(b), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// HookSettings is the settings layer (--settings JSON) whose hooks call
// `<bin> hook <event> <id>`. The CLI merges it with the user's settings:
// the user's own hooks still run (checked against the real CLI). Our hooks
// are quick and always succeed, so they never hold up the CLI; with
// answer, the PermissionRequest hook (`… <id> wait`) waits for Neovim's
// answer (up to AnswerTimeout) while the CLI shows its own prompt, which
// it does not hold up either (answer.go).
func HookSettings(bin, id string, answer bool) string {
	hooks := map[string]any{}
	for _, ev := range HookEvents {
		cmd, timeout := shellQuote(bin)+" hook "+ev+" "+id, 5
		if answer && ev == "PermissionRequest" {
			cmd, timeout = cmd+" wait", AnswerTimeout
		}
		entry := map[string]any{"hooks": []any{map[string]any{
			"type": "command", "command": cmd, "timeout": timeout,
		}}}
		switch ev {
		case "PreToolUse", "PostToolUse", "PermissionRequest":
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return string(b)
}

// HTTPHookSettings is the settings layer whose hooks are HTTP hooks to the
// IDE server on port (loopback; the CLI posts the hook's JSON, and reads
// the answer as the hook's output): no process per hook, and they reach us
// from wherever the CLI runs that the port is forwarded to. They show
// token: the layer goes to the CLI as a 0600 file (handleTerminal). With
// answer, the PermissionRequest hook waits for Neovim's answer as the
// command hook does.
func HTTPHookSettings(port int, id string, answer bool, token string) string {
	hooks := map[string]any{}
	for _, ev := range HookEvents {
		url, timeout := "http://127.0.0.1:"+strconv.Itoa(port)+mcp.HTTPPrefix+ev+"/"+id, 5
		if answer && ev == "PermissionRequest" {
			url, timeout = url+"/wait", AnswerTimeout
		}
		entry := map[string]any{"hooks": []any{map[string]any{
			"type": "http", "url": url, "timeout": timeout,
			"headers": map[string]string{"Authorization": "Bearer " + token},
		}}}
		switch ev {
		case "PreToolUse", "PostToolUse", "PermissionRequest":
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return string(b)
}

// serveHook serves the CLI's HTTP hooks: POST <mcp.HTTPPrefix><event>/<id>
// [/wait], the hook's JSON as the body, the token in Authorization. The
// answer is the hook's output: {} but for a PermissionRequest answered in
// Neovim. A request the feature cannot use is still answered {} (and
// logged): a hook must never stop the CLI.
func (s *Sessions) serveHook(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, mcp.HTTPPrefix), "/")
	id := ""
	if len(parts) > 1 {
		id = parts[1]
	}
	// the session's own token: one CLI (and every command its model runs
	// can read its settings file) cannot post another session's hooks
	want := sha256.Sum256([]byte("Bearer " + s.hookTokenOf(id)))
	got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	if id == "" || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		s.log.Warn("a hook request without its session's token was refused", "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
		return
	}
	wait := len(parts) == 3 && parts[2] == "wait" && parts[0] == "PermissionRequest"
	if (len(parts) != 2 && !wait) || !slices.Contains(HookEvents, parts[0]) {
		http.Error(w, "no such hook", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxHookInput+1))
	if err != nil || len(body) > MaxHookInput {
		body = nil // the event still counts
	}
	c, in := digest(parts[0], parts[1], body, s.pathsOf(parts[1]))
	if wait && in.ToolName != "AskUserQuestion" { // a question's answers are given in the terminal
		c.Wait = "1"
	}
	out := []byte("{}")
	p, err := s.hook(c)
	if err != nil {
		s.log.Debug("hook not applied", "event", c.Event, "session", c.Session, "err", err)
	} else if p != nil {
		// the request is the wait's context: the CLI drops it when the
		// prompt was answered in its terminal, or dismissed
		d, err := s.await(r.Context(), p)
		if err == nil && d != nil {
			if o, err := DecisionOutput(d, in.ToolName, in.ToolInput, in.Suggestions); err == nil && len(o) > 0 {
				out = o
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// pathsOf maps the paths the hooks of session id name: a far terminal's
// are far paths, mapped through the workspace's mapping, and one outside
// it (or with no mapping in force) is refused, never taken as a local path
// that happens to exist (the session keeps its local directory); nil for a
// terminal here.
func (s *Sessions) pathsOf(id string) func(string) (string, bool) {
	s.mu.Lock()
	x := s.byID[id]
	far := x != nil && x.far
	s.mu.Unlock()
	if !far {
		return nil
	}
	return func(p string) (string, bool) {
		m := s.h.Workspace().Map()
		if !m.Active() {
			return "", false
		}
		l, err := m.ToLocal(p)
		return l, err == nil
	}
}

// hookTokenOf is session id's token: keyed by the feature's secret, so
// that no table of tokens need be kept.
func (s *Sessions) hookTokenOf(id string) string {
	m := hmac.New(sha256.New, []byte(s.hookToken))
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// updateParams are what Lua reports of a session.
type updateParams struct {
	// ID is the session's; "" for a diff event whose session Lua does not
	// know (the host finds whose).
	ID string `json:"id"`
	// Tab names the diff of a diff event.
	Tab string `json:"tab"`
	// Event: "pid" (with PID), "exited", "rename" (with Name), "seen"
	// (the user looked: done → idle), "used" (the user made it the
	// current terminal), "diff_opened", "diff_closed".
	Event string `json:"event"`
	PID   int    `json:"pid"`
	Name  string `json:"name"`
}

func (s *Sessions) handleUpdate(_ context.Context, p updateParams) (any, error) {
	s.mu.Lock()
	if (p.Event == "diff_opened" || p.Event == "diff_closed") && p.ID == "" {
		// (Lua names the session when the host told it whose the diff is)
		if p.ID = s.diffSessionLocked(p.Event, p.Tab); p.ID == "" {
			s.mu.Unlock()
			return nil, nil // no terminal's
		}
	}
	x := s.byID[p.ID]
	if x == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("no session %q (:ClaudeSessions lists them)", p.ID)
	}
	switch p.Event {
	case "pid":
		x.PID = p.PID
		s.mu.Unlock()
		return nil, nil
	case "used":
		s.tick++
		x.used = s.tick
		s.mu.Unlock()
		return nil, nil
	case "rename":
		if strings.TrimSpace(p.Name) == "" {
			s.mu.Unlock()
			return nil, errors.New("a session's name cannot be empty")
		}
		x.Name = display.Line(strings.TrimSpace(p.Name), maxName)
		snap := *x
		s.mu.Unlock()
		s.emit(snap, snap.State)
		return nil, nil
	case "exited":
		x.diffs, x.prompt = 0, false
		gone := s.dropLocked(x.ID, nil)
		s.setLocked(x, Exited, "")
		s.answered(x.ID, gone, ByGone)
		s.removeFile(p.ID)
		s.mu.Lock()
		far := s.far
		s.mu.Unlock()
		if x.far && far != nil {
			far.Forget(p.ID)
		}
	case "seen":
		if x.State == Done {
			s.setLocked(x, Idle, "")
		} else {
			s.mu.Unlock()
			return nil, nil
		}
	case "diff_opened":
		x.diffs++
		s.setLocked(x, NeedsInput, display.Line(DiffWaiting+p.Tab, maxWaiting))
	case "diff_closed":
		if x.diffs > 0 {
			x.diffs--
		}
		if x.diffs == 0 && !x.prompt && x.State == NeedsInput {
			s.setLocked(x, Working, "")
		} else {
			s.mu.Unlock()
			return nil, nil
		}
	default:
		s.mu.Unlock()
		return nil, fmt.Errorf("sessions.update: unknown event %q", p.Event)
	}
	return nil, nil
}

// diffSessionLocked is the terminal session a diff is for: the one whose
// CLI started an edit last (its hooks say so), else the only terminal
// running. s.mu is held.
func (s *Sessions) diffSessionLocked(event, tab string) string {
	if event == "diff_closed" {
		id := s.diffOwner[tab]
		delete(s.diffOwner, tab)
		return id
	}
	var best *Session
	live := 0
	for _, x := range s.byID {
		if x.Mode != ModeTerminal || x.State == Exited {
			continue
		}
		live++
		if !x.edited.IsZero() && (best == nil || x.edited.After(best.edited)) {
			best = x
		}
	}
	if best == nil {
		if live != 1 {
			return ""
		}
		for _, x := range s.byID {
			if x.Mode == ModeTerminal && x.State != Exited {
				best = x
			}
		}
	}
	s.diffOwner[tab] = best.ID
	return best.ID
}

// setLocked moves x to state (s.mu held; it unlocks it) and tells Lua
// when the state changed.
func (s *Sessions) setLocked(x *Session, state, waiting string) {
	prev := x.State
	x.Waiting = waiting
	if state != NeedsInput {
		x.Request = nil
	}
	if prev == state {
		s.mu.Unlock()
		return
	}
	x.State = state
	x.Since = s.now().Unix()
	snap := *x
	s.mu.Unlock()
	s.emit(snap, prev)
}

// emit tells Lua a session's state, with the whole session (Lua must not
// ask the host back while it handles an event): sessions._on_event("state",
// {id, state, previous, session}).
func (s *Sessions) emit(x Session, prev string) {
	s.h.Emit("sessions.state", map[string]any{"id": x.ID, "state": x.State, "previous": prev, "session": x})
}

// HookCall is what `nvim-claude hook` sends: the event and a digest of
// the CLI's hook input.
type HookCall struct {
	Session string `json:"session"` // our id, from the hook's command line
	Event   string `json:"event"`
	// ClaudeSession is the CLI's session_id.
	ClaudeSession    string `json:"claude_session,omitempty"`
	Cwd              string `json:"cwd,omitempty"`
	Tool             string `json:"tool,omitempty"`
	Message          string `json:"message,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`
	// Input is the text of the tool's input a PermissionRequest asks for
	// (RequestText), cut in the middle when long (InputCut "1"); InputLines
	// counts the lines of the whole; Description is the model's.
	Input       string `json:"input,omitempty"`
	InputCut    string `json:"input_cut,omitempty"`
	InputLines  string `json:"input_lines,omitempty"`
	Description string `json:"description,omitempty"`
	// InputKey is a digest of the tool's input (PermissionRequest,
	// PostToolUse): the call that ran is the prompt that was answered.
	InputKey string `json:"input_key,omitempty"`
	// Wait ("1"): the PermissionRequest hook waits for Neovim's answer.
	Wait string `json:"wait,omitempty"`
	// Plan is the plan an ExitPlanMode prompt presents (PlanCut "1": it
	// lost its end, at MaxPlan).
	Plan    string `json:"plan,omitempty"`
	PlanCut string `json:"plan_cut,omitempty"`
	// cwdSeen: the hook named a cwd, even one refused (a far path outside
	// the mapping): the first hook places the session all the same.
	cwdSeen bool
}

func (s *Sessions) handleHook(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	if len(req.Params) > MaxHookParams {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "hook parameters too large"}
	}
	var c HookCall
	if err := json.Unmarshal(req.Params, &c); err != nil {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "bad hook parameters: " + err.Error()}
	}
	p, err := s.hook(c)
	if err != nil {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: err.Error()}
	}
	if p != nil {
		// the hook's connection is the wait's context: its end (the
		// hook cancels its call when the CLI kills it) drops the prompt
		d, err := s.await(ctx, p)
		if err != nil {
			return nil, err
		}
		if d != nil {
			return hookAnswer{Decision: d}, nil
		}
	}
	return map[string]any{}, nil
}

// Hook applies one hook call to its terminal session.
func (s *Sessions) Hook(c HookCall) error {
	_, err := s.hook(c)
	return err
}

// hook applies hook call c; for a PermissionRequest that waits for an
// answer, it returns the prompt's entry in the table of pending answers.
func (s *Sessions) hook(c HookCall) (*pendingAnswer, error) {
	s.mu.Lock()
	x := s.byID[c.Session]
	if x == nil || x.Mode != ModeTerminal {
		s.mu.Unlock()
		return nil, fmt.Errorf("no terminal session %q", c.Session)
	}
	if x.State == Exited {
		s.mu.Unlock()
		return nil, nil
	}
	if id := cliSessionID(c.ClaudeSession); id != "" {
		x.ClaudeSession = id
	}
	if (c.Cwd != "" || c.cwdSeen) && !x.placed {
		x.placed = true
		if wt := cliWorktree(x.Dir, c.Cwd); wt != "" {
			// A CLI started with its own --worktree (-w) made that
			// worktree and runs in it from its first hook: the session
			// is the worktree's from now on (its files' selections go to
			// it, the dashboard tags it). Later hooks' cwd is where the
			// model's shell cd'd to, which makes no worktree its own.
			x.Dir = wt
		}
	}
	c.Tool = display.Line(c.Tool, maxTool)
	c.Message = display.Line(c.Message, maxWaiting)
	s.log.Debug("hook", "session", c.Session, "event", c.Event, "tool", c.Tool, "type", c.NotificationType)
	var p *pendingAnswer
	var settled []string // waiting prompts answered in the terminal
	switch c.Event {
	case "UserPromptSubmit", "PreToolUse", "PostToolUse":
		if c.Event == "UserPromptSubmit" {
			s.tick++
			x.used = s.tick
		}
		// A tool ran or is about to: the prompt before it is answered. The
		// CLI asks before one call at a time, after that call's PreToolUse
		// (checked against the real CLI): a PreToolUse settles every
		// prompt before it, a PostToolUse the one of its call.
		if c.Event == "PostToolUse" {
			settled = s.ranLocked(x.ID, c)
			if c.Plan != "" {
				// the plan file the model wrote: what its ExitPlanMode
				// presents
				x.plan, x.planCut = c.Plan, c.PlanCut
			}
		} else {
			settled = s.dropLocked(x.ID, nil)
		}
		if c.Event == "PreToolUse" && editTools[c.Tool] {
			x.edited = s.now()
		}
		if left := s.pendingOfLocked(x.ID); len(left) > 0 {
			x.Request = left[0].req
			x.prompt = true
			s.setLocked(x, NeedsInput, x.waitingFor(x.Request.waiting()))
			break
		}
		x.prompt = false
		x.Request = nil
		if x.diffs > 0 {
			s.mu.Unlock()
			break
		}
		s.setLocked(x, Working, "")
	case "PermissionRequest":
		x.prompt = true
		if c.Tool == PlanTool && c.Plan == "" {
			c.Plan, c.PlanCut = x.plan, x.planCut
		}
		if c.Tool == PlanTool && strings.TrimSpace(c.Input) == "" && c.Plan != "" {
			// the plan is what this prompt allows: its start and end show
			text, cut := CutText(c.Plan, MaxRequestText)
			c.Input, c.InputLines, c.InputCut = text, strconv.Itoa(strings.Count(strings.TrimRight(c.Plan, "\n"), "\n")+1), ""
			if cut || c.PlanCut != "" {
				c.InputCut = "1"
			}
		}
		lines, _ := strconv.Atoi(c.InputLines)
		x.Request = newRequest(c.Tool, c.Input, c.Description, c.InputCut != "", lines)
		if c.Wait != "" && c.Tool != "" {
			// (no tool: the hook's input could not be read, so the
			// prompt would show nothing of what an answer allows; the
			// CLI keeps its own)
			p = s.addAnswerLocked(x, c)
		}
		s.setLocked(x, NeedsInput, x.waitingFor(x.Request.waiting()))
	case "Notification":
		// Only a question waits for the user: idle_prompt ("Claude is
		// waiting for your input") comes long after Stop, and others
		// (auth_success, agent_completed, push_notification …) just inform.
		if !askNotifications[c.NotificationType] {
			s.mu.Unlock()
			return nil, nil
		}
		waiting := c.Message
		if x.prompt && x.Request != nil {
			// the CLI's "needs your permission to use Bash" says less
			// than the request it follows
			waiting = x.Request.waiting()
		}
		x.prompt = true
		s.setLocked(x, NeedsInput, x.waitingFor(waiting))
	case "Stop", "StopFailure":
		x.prompt, x.diffs = false, 0
		settled = s.dropLocked(x.ID, nil)
		s.setLocked(x, Done, "")
	default:
		s.mu.Unlock()
		return nil, fmt.Errorf("unknown hook event %q", c.Event)
	}
	s.answered(c.Session, settled, ByTerminal)
	return p, nil
}

// ChatEvent hears a chat's events (chat id, its cwd, the event) as the
// chat panel sends them to Lua; the chat's session id is "c" + its id
// (chatpanel.SessionWatch): "status" (state, cost_usd, session_id),
// "permission" (tool, summary), "permission_done". It must not block.
func (s *Sessions) ChatEvent(id, cwd, name string, data map[string]any) {
	switch name {
	case "status", "permission", "permission_done":
	default:
		return
	}
	sid := "c" + id
	s.mu.Lock()
	x := s.byID[sid]
	if x == nil {
		x = &Session{ID: sid, Name: display.Line("chat "+id+" · "+filepath.Base(cwd), maxName), Dir: cwd,
			Mode: ModeChat, State: Idle, Since: s.now().Unix()}
		s.seq++
		x.order = s.seq
		s.byID[sid] = x
	}
	switch name {
	case "status":
		if v, ok := data["cost_usd"].(float64); ok {
			x.CostUSD = v
		}
		if v, _ := data["session_id"].(string); cliSessionID(v) != "" {
			x.ClaudeSession = v
		}
		st, _ := data["state"].(string)
		switch st {
		case "running":
			if x.State == NeedsInput {
				s.mu.Unlock()
				return
			}
			s.setLocked(x, Working, "")
		case "idle":
			x.chatReqs = nil
			if x.State == Working || x.State == NeedsInput {
				x.prompt = false
				s.setLocked(x, Done, "")
				return
			}
			s.mu.Unlock()
		case "exited", "failed":
			x.chatReqs = nil
			s.setLocked(x, Exited, "")
		default:
			s.mu.Unlock()
		}
	case "permission":
		x.chatReqs = append(x.chatReqs, chatRequest(data))
		x.prompt = true
		x.Request = x.chatReqs[0]
		s.setLocked(x, NeedsInput, x.Request.waiting())
	case "permission_done":
		rid, _ := data["request_id"].(string)
		for i, r := range x.chatReqs {
			if r.RequestID == rid {
				x.chatReqs = append(x.chatReqs[:i:i], x.chatReqs[i+1:]...)
				break
			}
		}
		if len(x.chatReqs) > 0 && x.State == NeedsInput {
			// the state stays, but what it asks changed: Lua must show
			// the request now pending, not the one answered
			x.Request = x.chatReqs[0]
			x.Waiting = x.Request.waiting()
			snap := *x
			s.mu.Unlock()
			s.emit(snap, snap.State)
			return
		}
		x.prompt = false
		if x.State != NeedsInput {
			s.mu.Unlock()
			return
		}
		s.setLocked(x, Working, "")
	}
}
