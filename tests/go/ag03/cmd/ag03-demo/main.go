// The demonstration of chapter ag03 (`course run ag03`): your proxy in front of a scripted upstream.
//
// A small Responses API on 127.0.0.1 answers each request with the next authored stream of
// fixtures/ag03 (COURSE_FIXTURES, set by `course run`); your Proxy, served by the given ServeHTTP,
// reads it through the given HTTPUpstream and answers a client: a text answer, a tool call that runs
// once after its arguments are complete, and an upstream stream cut after the arguments, which must
// fail closed; each as JSON and as a stream. No network beyond 127.0.0.1, no API key, no cost.
//
// `course run` builds this file into your module (as cmd/ag03-demo, through go's -overlay, nothing
// written), so it uses your package exactly as a program of yours would.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"tinyllm/agent/proxy"
)

const tools = `[{"type":"function","name":"get_weather","strict":true,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`

func main() {
	os.Exit(run())
}

func run() int {
	fixtures := os.Getenv("COURSE_FIXTURES")
	if fixtures == "" {
		fmt.Println("COURSE_FIXTURES is not set: run this with `course run ag03`.")
		return 2
	}
	streams, err := readStreams(filepath.Join(fixtures, "streams.json"))
	if err != nil {
		fmt.Println("cannot read the chapter's streams:", err)
		return 1
	}
	script := &scriptedUpstream{streams: streams}
	upstreamURL, stopUpstream, err := listen(script)
	if err != nil {
		fmt.Println("cannot start the scripted upstream:", err)
		return 1
	}
	defer stopUpstream()
	upstream, err := proxy.NewHTTPUpstream(upstreamURL+"/v1", "", nil, 10*time.Second)
	if err != nil {
		fmt.Println("cannot reach the scripted upstream:", err)
		return 1
	}
	var mu sync.Mutex
	var runs []map[string]any
	weather := proxy.DemoTools()["get_weather"]
	counted := proxy.Tools{"get_weather": func(ctx context.Context, arguments map[string]any) (string, error) {
		mu.Lock()
		runs = append(runs, arguments)
		mu.Unlock()
		return weather(ctx, arguments)
	}}
	proxyURL, stopProxy, err := listen(&proxy.Proxy{Upstream: upstream, Tools: counted})
	if err != nil {
		fmt.Println("cannot start your proxy:", err)
		return 1
	}
	defer stopProxy()
	fmt.Println("ag03 demonstration: your proxy in front of a scripted upstream (fixtures/ag03), no network.")
	ran := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		done := runs
		runs = nil
		return done
	}
	ok := true
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "JSON", true: "stream"}[stream]
		ask := map[string]any{"model": "gpt-4.1-mini", "input": "What is the weather in Paris?", "tools": json.RawMessage(tools), "stream": stream}

		script.set("final_text")
		status, text, code := post(proxyURL, ask)
		good := status == 200 && text == "It is raining in Paris." && len(ran()) == 0
		ok = ok && good
		fmt.Printf("\n== text answer (%s): HTTP %d\n   %s\n   %s\n", mode, status, said(text, code), verdict(good, "ok"))

		script.set("tool_call", "final_after_tools")
		status, text, code = post(proxyURL, ask)
		calls := ran()
		good = status == 200 && strings.HasPrefix(text, "Paris:") && len(calls) == 1 && calls[0]["city"] == "Paris"
		ok = ok && good
		fmt.Printf("\n== tool call (%s): HTTP %d; get_weather ran %d time(s) with %v\n   %s\n   %s\n", mode, status, len(calls), calls, said(text, code), verdict(good, "ok"))

		script.set("cut_after_arguments")
		status, _, code = post(proxyURL, ask)
		calls = ran()
		good = status == 502 && len(calls) == 0
		ok = ok && good
		fmt.Printf("\n== upstream cut after the arguments (%s): HTTP %d, error code %q, tools run: %d\n   %s\n", mode, status, code, len(calls), verdict(good, "ok (failed closed)"))
	}
	if ok {
		fmt.Println("\nall scenarios behaved as the chapter says")
		return 0
	}
	fmt.Println("\nsome scenarios did not behave as the chapter says; `course check ag03` says which rule each breaks")
	return 1
}

// said is the answer's text, quoted, or what came instead.
func said(text, problem string) string {
	if problem != "" {
		return problem
	}
	return fmt.Sprintf("%q", text)
}

func verdict(good bool, yes string) string {
	if good {
		return yes
	}
	return "WRONG"
}

// post asks the proxy and reads its answer: the status, the answer's text (the completed response's,
// for a stream), and an error answer's code (or what went wrong, for a client).
func post(base string, payload map[string]any) (int, string, string) {
	data, _ := json.Marshal(payload)
	client := &http.Client{Timeout: 30 * time.Second}
	answer, err := client.Post(base+"/v1/responses", "application/json", bytes.NewReader(data))
	if err != nil {
		return 0, "", "no answer: " + err.Error()
	}
	defer answer.Body.Close()
	body, err := io.ReadAll(answer.Body)
	if err != nil {
		return answer.StatusCode, "", "the answer was cut: " + err.Error()
	}
	if answer.StatusCode != http.StatusOK {
		var failure struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(body, &failure)
		if failure.Error.Code == "proxy_error" { // a panic of a stub says what is still to write
			return answer.StatusCode, "", failure.Error.Message
		}
		return answer.StatusCode, "", failure.Error.Code
	}
	if strings.HasPrefix(answer.Header.Get("Content-Type"), "text/event-stream") {
		reader := proxy.NewEventReader(bytes.NewReader(body))
		var last proxy.Event
		for {
			e, err := reader.Next()
			if err != nil {
				break
			}
			last = e
		}
		body = nil
		if last.Type == "response.completed" {
			body, _ = json.Marshal(last.Response)
		}
	}
	var response struct {
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(body, &response); err != nil {
		return answer.StatusCode, "", "not a response: " + err.Error()
	}
	var text strings.Builder
	for _, item := range response.Output {
		for _, part := range item.Content {
			text.WriteString(part.Text)
		}
	}
	return answer.StatusCode, text.String(), ""
}

// scriptedUpstream answers each POST /v1/responses with the next stream of its script.
type scriptedUpstream struct {
	mu      sync.Mutex
	streams map[string][]byte
	script  []string
}

func (s *scriptedUpstream) set(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = names
}

func (s *scriptedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	var name string
	if len(s.script) > 0 {
		name, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	if name == "" {
		http.Error(w, `{"error": {"message": "nothing scripted", "type": "invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(s.streams[name])
}

// readStreams is each stream of streams.json as its body: every event framed, then its tail.
func readStreams(path string) (map[string][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Streams map[string]struct {
			Events []json.RawMessage `json:"events"`
			Tail   string            `json:"tail"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, err
	}
	bodies := map[string][]byte{}
	for name, stream := range file.Streams {
		var body bytes.Buffer
		for _, event := range stream.Events {
			var head struct{ Type string }
			json.Unmarshal(event, &head)
			var data bytes.Buffer
			json.Compact(&data, event)
			fmt.Fprintf(&body, "event: %s\ndata: %s\n\n", head.Type, data.Bytes())
		}
		bodies[name] = append(body.Bytes(), stream.Tail...)
	}
	return bodies, nil
}

// listen serves handler on 127.0.0.1 until stop is called.
func listen(handler http.Handler) (url string, stop func(), err error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go server.Serve(listener)
	return "http://" + listener.Addr().String(), func() { server.Close() }, nil
}
