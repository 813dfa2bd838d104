package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// lineFramer frames messages the way MCP's stdio transport does: one
// JSON-RPC message a line, no embedded newlines. Blank lines are skipped. A
// line over the read limit cannot be skipped (the stream cannot be
// resynchronised), so it is answered with a JSON-RPC error and ends the
// connection; the transport has no other way to say why.
type lineFramer struct {
	r         *bufio.Reader
	w         io.Writer
	closer    io.Closer // nil when the stream cannot be closed here
	readLimit int
	writeWait time.Duration

	err     error   // set by read after a line too long: every later read fails
	newline [1]byte // written after each message

	closeOnce sync.Once
	closeErr  error
}

// newLineFramer frames the stream read from r and written to w; closer,
// when not nil, ends it (see close).
func newLineFramer(r *bufio.Reader, w io.Writer, closer io.Closer, readLimit int, writeWait time.Duration) *lineFramer {
	return &lineFramer{r: r, w: w, closer: closer, readLimit: readLimit, writeWait: writeWait, newline: [1]byte{'\n'}}
}

// errLineTooLong reports a message over the read limit.
const errLineTooLong = sentinel("mcp: message too big")

func (f *lineFramer) read(context.Context) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	for {
		line, err := readLine(f.r, f.readLimit)
		switch {
		case errors.Is(err, errLineTooLong):
			f.err = fmt.Errorf("reading a line of more than %d bytes: %w", f.readLimit, err)
			return nil, &frameError{
				reason: "message too big",
				last:   encodeError(nil, invalidRequest(fmt.Sprintf("message larger than %d bytes", f.readLimit))),
			}
		case errors.Is(err, io.EOF):
			return nil, errInputDone
		case err != nil:
			return nil, err
		case len(bytes.TrimSpace(line)) == 0:
			continue
		}
		return line, nil
	}
}

// readLine reads one line without its newline; a line over limit bytes is
// errLineTooLong. A last line without a newline counts.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// write writes msg and its newline; to a net.Conn in one writev, without
// copying msg (which may be a whole file).
func (f *lineFramer) write(ctx context.Context, msg []byte) error {
	if d, ok := f.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		if err := d.SetWriteDeadline(deadline(ctx, f.writeWait)); err != nil {
			return err
		}
	}
	bufs := net.Buffers{msg, f.newline[:]}
	_, err := bufs.WriteTo(f.w)
	return err
}

// control is never called: a lineFramer queues no control frames.
func (f *lineFramer) control(context.Context, int, []byte) error {
	return errors.New("mcp: a line stream has no control frames")
}

// shutdown closes the stream: there is no close handshake.
func (f *lineFramer) shutdown(context.Context, int, string) error { return f.close() }

// close closes the stream if it can be closed here.
func (f *lineFramer) close() error {
	f.closeOnce.Do(func() {
		if f.closer != nil {
			f.closeErr = f.closer.Close()
		}
	})
	return f.closeErr
}
