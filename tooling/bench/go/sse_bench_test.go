// Benchmarks of the Go reference's EventReader against two Go SSE parsers on the same input:
// openai-go's packages/ssestream (what the official Go SDK streams with) and tmaxmax/go-sse's Read.
// Run by tooling/bench/run.py (its go section); this module exists only to hold the peers, so the
// reference and the learners' modules stay free of dependencies.
package bench

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	sse "github.com/tmaxmax/go-sse"

	"tinyllm/agent/provider"
)

// chatStream is a chat-completions stream of about size bytes: text chunks, finish, [DONE]. The
// same shape as the Python benchmark's stream.
func chatStream(size int) []byte {
	words := []string{"Hel", "lo", " wor", "ld", ", ", "café", " — ", "stream", "ing", " 🚀"}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		chunk, _ := json.Marshal(map[string]any{
			"id": "c1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": words[i%len(words)]}, "finish_reason": nil}},
		})
		b.WriteString("data: " + string(chunk) + "\n\n")
	}
	b.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// chunked returns at most size bytes per Read, as a socket would.
type chunked struct {
	data []byte
	size int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.size, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func ours(data []byte, size int) (int, error) {
	r := provider.NewEventReader(&chunked{data, size})
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func openaiGo(data []byte, size int) (int, error) {
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(&chunked{data, size})}
	d := ssestream.NewDecoder(resp)
	n := 0
	for d.Next() {
		n++
	}
	return n, d.Err()
}

func goSSE(data []byte, size int) (int, error) {
	n := 0
	for _, err := range sse.Read(&chunked{data, size}, &sse.ReadConfig{MaxEventSize: 64 << 20}) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

var parsers = []struct {
	name string
	fn   func([]byte, int) (int, error)
}{{"reference", ours}, {"openai-go-ssestream", openaiGo}, {"go-sse", goSSE}}

func run(b *testing.B, fn func([]byte, int) (int, error), data []byte, size, want int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		n, err := fn(data, size)
		if err != nil || n != want {
			b.Fatalf("%d events, error %v; want %d", n, err, want)
		}
	}
}

// BenchmarkChatStream: the 4 MB stream, 4 KiB reads, every parser.
func BenchmarkChatStream(b *testing.B) {
	data := chatStream(4_000_000)
	want, _ := ours(data, 4096)
	for _, p := range parsers {
		b.Run(p.name, func(b *testing.B) { run(b, p.fn, data, 4096, want) })
	}
}

// BenchmarkOneEvent: linearity, the reference alone; the same MB/s at every size means linear.
func BenchmarkOneEvent(b *testing.B) {
	for _, c := range []struct {
		name       string
		mib, reads int
	}{{"1MiB-4KiB-reads", 1, 4096}, {"4MiB-4KiB-reads", 4, 4096}, {"16MiB-4KiB-reads", 16, 4096}, {"1MiB-1B-reads", 1, 1}, {"4MiB-1B-reads", 4, 1}} {
		data := []byte("data: " + strings.Repeat("x", c.mib<<20) + "\n\n")
		b.Run(c.name, func(b *testing.B) { run(b, ours, data, c.reads, 1) })
	}
}
