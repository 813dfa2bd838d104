package mcp

import (
	"context"
	"io"
	"runtime"
	"time"
)

// framer carries whole messages over one connection's transport, apart
// from the engine (conn) that gives them meaning: gopls's
// internal/jsonrpc2 keeps its Stream apart from its Conn the same way, and
// the go-sdk's mcp package runs one session engine over swappable
// Transports. Two framers exist: wsFramer (WebSocket messages, for the
// Claude Code CLI) and lineFramer (one message a line, for the editor tools'
// stdio relay).
//
// The engine calls read from its read loop only, and write, control,
// shutdown (and a heartbeat's beat) from one goroutine at a time, the one
// holding the connection's write lock; close may be called from anywhere,
// at any time, more than once.
type framer interface {
	// read returns the next message. An error wrapping a *frameError is
	// a message that broke the transport's rules: the engine ends the
	// connection in order and reads on, discarding, until read fails
	// otherwise. errInputDone is the peer's clean end of input: the
	// engine lets the requests in flight finish and flushes their replies
	// before it closes. Any other error ends the read loop. A blocked read
	// ends when the framer is shut down or closed.
	read(ctx context.Context) ([]byte, error)
	// write sends one message. Its time is bounded by the framer's write
	// timeout and by ctx's deadline.
	write(ctx context.Context, msg []byte) error
	// control sends a control frame that the framer queued itself through
	// its link (a WebSocket pong).
	control(ctx context.Context, kind int, data []byte) error
	// shutdown ends the connection in order, once: the framer tells the
	// peer why, if its transport can (a WebSocket close frame with code
	// and reason), and read then drains until the peer answers or the
	// framer's grace period is over.
	shutdown(ctx context.Context, code int, reason string) error
	// close ends the connection at once, unblocking read and write.
	close() error
}

// heartbeat is a framer that checks its peer's liveness on a timer: the
// writer calls beat at every tick of interval. An error wrapping a
// *frameError ends the connection in order; any other ends it at once.
type heartbeat interface {
	interval() time.Duration
	beat(ctx context.Context, now time.Time) error
}

// link is what a framer may ask of its connection from inside read (where
// gorilla/websocket runs its control-frame handlers).
type link interface {
	// queueControl queues a control frame for the writer without
	// waiting; it reports false when the frame was dropped.
	queueControl(kind int, data []byte) bool
	// requestClose asks for the connection's orderly end; the first
	// request wins.
	requestClose(code int, reason string)
	// isClosing reports whether the orderly end has been requested, after
	// which messages read are discarded.
	isClosing() bool
}

// frameError is a message that broke its transport's rules. The
// connection ends in order: code and reason say why (a WebSocket close
// frame), and last, when set, is one message written just before (a
// JSON-RPC error, for a transport with no other way to say it).
type frameError struct {
	code   int
	reason string
	last   []byte
}

func (e *frameError) Error() string { return "mcp: " + e.reason }

// errInputDone is a framer's clean end of input (see framer.read).
const errInputDone = sentinel("mcp: end of input")

// readMessage reads r to its end, or to max bytes, into a buffer of
// exactly that size. io.ReadAll grows one buffer by copying it, so a 20 MB
// message passed through 40 MB of buffers alive at once and left many more
// as garbage; here the message is read in chunks (up to 1 MiB) and copied
// once. The first chunk is scratch, the caller's buffer reused from one
// message to the next, so that a small message costs one allocation of its
// own size rather than a 4 KiB chunk.
func readMessage(r io.Reader, max int64, scratch []byte) ([]byte, error) {
	var chunks [][]byte
	total := int64(0)
	size := int64(len(scratch))
	for total < max {
		var buf []byte
		if total == 0 {
			buf = scratch[:min(size, max)]
		} else {
			buf = make([]byte, min(size, max-total))
		}
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if n > 0 {
			chunks = append(chunks, buf[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(size*2, 1<<20)
	}
	if len(chunks) == 0 {
		return []byte{}, nil
	}
	out := make([]byte, 0, total)
	for i, ch := range chunks {
		out = append(out, ch...)
		chunks[i] = nil
	}
	if total >= largeMessage {
		// The chunks are garbage: collect them now, so that what the
		// handler decodes from the message (a whole file) takes their
		// place instead of adding to the peak.
		runtime.GC()
	}
	return out, nil
}

// readChunk is the size of the first chunk readMessage reads a message in.
const readChunk = 4096

// largeMessage is the size of a message read from which its chunks are
// collected at once (see readMessage). It is a whole large file's size, not
// a usual proposal's: a forced collection costs little in itself, but the
// memory it frees is handed back to the system over time and the next
// message then pays for touching fresh pages (a few ms a MiB here), which
// at 1 MB was more than the open's own work in the host. Below this size
// the chunks are left to the collector's own pace; the peak they add is
// at most this size.
const largeMessage = 8 << 20

// hugeReply is the size of a written message after which the process's
// free memory goes back to the operating system. It is above what answers
// that come often reach (getDiagnostics for a whole project: a few MB), so
// that a forced collection is paid for a whole file, not on every such
// call.
const hugeReply = 8 << 20
