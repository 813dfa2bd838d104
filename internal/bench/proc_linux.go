//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// monoMicros is CLOCK_MONOTONIC in microseconds: the clock Neovim's
// vim.loop.hrtime() reads, so that times taken here and inside Neovim can be
// compared.
func monoMicros() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		// Never happens on Linux; fall back to something monotonic-ish.
		return time.Now().UnixMicro()
	}
	return ts.Nano() / 1e3
}

// cpuClock is the CPU time (user + system, all threads) a process has used
// so far, with nanosecond precision: the kernel's process CPU clock
// (clock_getcpuclockid), the exact sum behind /proc/<pid>/stat's tick-rounded
// utime+stime.
func cpuClock(pid int) (time.Duration, error) {
	clk := (^uintptr(pid) << 3) | 2 // MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clk, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, fmt.Errorf("CPU clock of pid %d: %w", pid, errno)
	}
	return time.Duration(ts.Nano()), nil
}

// statTicks is utime+stime from /proc/<pid>/stat, in clock ticks (USER_HZ,
// 100 per second on Linux).
func statTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatTicks(string(b))
}

// parseStatTicks extracts utime+stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatTicks(line string) (int64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", line)
	}
	ut, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	st, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return ut + st, nil
}

// memInfo is a process's resident memory from /proc/<pid>/status.
type memInfo struct {
	RSS int64 // VmRSS, bytes
	HWM int64 // VmHWM (peak RSS over the process's life), bytes
}

func readMem(pid int) (memInfo, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memInfo{}, err
	}
	return parseStatus(string(b))
}

func parseStatus(s string) (memInfo, error) {
	var m memInfo
	found := 0
	for _, line := range strings.Split(s, "\n") {
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &m.RSS
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &m.HWM
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return m, fmt.Errorf("malformed status line %q", line)
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status line %q: %w", line, err)
		}
		*dst = kb * 1024
		found++
	}
	if found < 2 {
		return m, fmt.Errorf("VmRSS/VmHWM missing from /proc status")
	}
	return m, nil
}

// childPIDs lists the children of pid whose command name is comm ("" = any).
func childPIDs(pid int, comm string) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if comm != "" {
				name, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
				if err != nil || strings.TrimSpace(string(name)) != comm {
					continue
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// fileEvent is an inotify event: a file name in the watched directory.
type fileEvent struct {
	Name string
	Mask uint32
	Mono int64 // µs, when it was read
}

// dirWatch reports files created or renamed into one directory.
type dirWatch struct {
	f      *os.File
	Events chan fileEvent
	done   chan struct{}
}

// watchDir watches dir for files being created, written and renamed into it.
func watchDir(dir string) (*dirWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_CLOSE_WRITE|syscall.IN_MOVED_TO); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("inotify %s: %w", dir, err)
	}
	w := &dirWatch{f: os.NewFile(uintptr(fd), "inotify"), Events: make(chan fileEvent, 256), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *dirWatch) loop() {
	defer close(w.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := w.f.Read(buf)
		mono := monoMicros()
		if err != nil {
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameStart := off + syscall.SizeofInotifyEvent
			nameEnd := nameStart + int(ev.Len)
			if nameEnd > n {
				break
			}
			name := strings.TrimRight(string(buf[nameStart:nameEnd]), "\x00")
			select {
			case w.Events <- fileEvent{Name: name, Mask: ev.Mask, Mono: mono}:
			default:
			}
			off = nameEnd
		}
	}
}

// close stops watching (the reader unblocks: the file is pollable).
func (w *dirWatch) close() {
	_ = w.f.Close()
	<-w.done
}

// lockCreated reports whether an inotify event completes a lock file
// (<port>.lock renamed into place or closed after writing).
func lockCreated(ev fileEvent) bool {
	if ev.Mask&(syscall.IN_MOVED_TO|syscall.IN_CLOSE_WRITE) == 0 || !strings.HasSuffix(ev.Name, ".lock") {
		return false
	}
	_, err := strconv.Atoi(strings.TrimSuffix(ev.Name, ".lock"))
	return err == nil
}

// ioCounts are a process's rchar / wchar from /proc/<pid>/io: bytes it has
// read and written through system calls (pipes and sockets included).
type ioCounts struct{ read, written int64 }

func readIO(pid int) (ioCounts, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return ioCounts{}, err
	}
	return parseIO(string(b))
}

func parseIO(s string) (ioCounts, error) {
	var c ioCounts
	found := 0
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "rchar:":
			c.read, found = v, found+1
		case "wchar:":
			c.written, found = v, found+1
		}
	}
	if found != 2 {
		return c, fmt.Errorf("rchar/wchar missing from /proc io")
	}
	return c, nil
}

// ioWatch notes when a process has read (or written) n more bytes than when
// the watch began: the moment a payload has crossed into (or out of) it.
type ioWatch struct {
	stop chan struct{}
	done chan int64 // CLOCK_MONOTONIC µs, or 0 if stopped first
}

func watchIO(pid int, written bool, n int64) (*ioWatch, error) {
	base, err := readIO(pid)
	if err != nil {
		return nil, err
	}
	w := &ioWatch{stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		for {
			select {
			case <-w.stop:
				w.done <- 0
				return
			default:
			}
			c, err := readIO(pid)
			if err != nil {
				w.done <- 0
				return
			}
			d := c.read - base.read
			if written {
				d = c.written - base.written
			}
			if d >= n {
				w.done <- monoMicros()
				return
			}
			time.Sleep(250 * time.Microsecond)
		}
	}()
	return w, nil
}

// result stops the watch and returns when the bytes had crossed (0: not).
func (w *ioWatch) result() int64 {
	close(w.stop)
	return <-w.done
}
