package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// overWire sends e through JSON as a client would receive it.
func overWire(t *testing.T, e *jsonrpc.Error) *jsonrpc.Error {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("marshal %+v: %v", e, err)
	}
	var got jsonrpc.Error
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return &got
}

// jsonEqual compares two JSON texts as values; "" stands for absent.
func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	if len(got) == 0 || want == "" {
		return len(got) == 0 && want == ""
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("unmarshal %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("unmarshal want %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// Every enforcement denial goes out as -32603 with its class as message and
// {reason, tool, skill_id} as data (acceptance criterion 17), and comes back
// as a *enforce.Denial matching its own sentinel and no other.
func TestDenialErrorsBothWays(t *testing.T) {
	for _, reason := range enforce.Reasons() {
		for _, detail := range []string{"", "memories/../etc"} {
			t.Run(fmt.Sprintf("%s/detail=%q", reason, detail), func(t *testing.T) {
				d := &enforce.Denial{Reason: reason, Tool: "Bash", SkillID: "memory-capture", Detail: detail}
				e := jsonrpc.ErrorFromGo(fmt.Errorf("dispatch: %w", d))

				if e.Code != jsonrpc.InternalError || e.Message != reason.Class() {
					t.Errorf("code, message = %d, %q; want %d, %q", e.Code, e.Message, jsonrpc.InternalError, reason.Class())
				}
				want := fmt.Sprintf(`{"reason":%q,"tool":"Bash","skill_id":"memory-capture"}`, reason)
				if detail != "" {
					want = fmt.Sprintf(`{"reason":%q,"tool":"Bash","skill_id":"memory-capture","detail":%q}`, reason, detail)
				}
				if !jsonEqual(t, e.Data, want) {
					t.Errorf("data = %s, want %s", e.Data, want)
				}

				err := overWire(t, e).Err()
				if !errors.Is(err, reason.Sentinel()) {
					t.Errorf("errors.Is(%v, %v) = false", err, reason.Sentinel())
				}
				for _, other := range enforce.Reasons() {
					if other.Sentinel() != reason.Sentinel() && errors.Is(err, other.Sentinel()) {
						t.Errorf("error of %s also matches %s", reason, other)
					}
				}
				if got, ok := enforce.AsDenial(err); !ok || *got != *d {
					t.Errorf("AsDenial = %+v, %v; want %+v", got, ok, d)
				}
				var re *jsonrpc.RemoteError
				if !errors.As(err, &re) || re.Code != jsonrpc.InternalError || re.Message != reason.Class() {
					t.Errorf("RemoteError = %+v", re)
				}
				if back := jsonrpc.ErrorFromGo(err); !reflect.DeepEqual(back, overWire(t, e)) {
					t.Errorf("ErrorFromGo(Err()) = %+v, want %+v", back, e)
				}
			})
		}
	}
}

func TestErrorsBothWays(t *testing.T) {
	tooBig := &jsonrpc.FrameTooLargeError{Size: 2 << 20, Max: 1 << 20}
	custom := (&jsonrpc.Error{Code: -32000, Message: "upstream_busy", Data: json.RawMessage(`{"retry_ms":5}`)}).Err()
	tests := []struct {
		name    string
		err     error
		code    int
		message string
		data    string
		back    error // what the decoded error must match
		as      any   // a typed error the decoded error must hold, compared by value
	}{
		{name: "parse", err: jsonrpc.ErrParse, code: jsonrpc.ParseError, message: "parse_error", back: jsonrpc.ErrParse},
		{name: "invalid request", err: fmt.Errorf("x: %w", jsonrpc.ErrInvalidRequest), code: jsonrpc.InvalidRequest, message: "invalid_request", back: jsonrpc.ErrInvalidRequest},
		{
			name: "request error", err: &jsonrpc.RequestError{ID: json.RawMessage(`1`), Detail: "method is required"},
			code: jsonrpc.InvalidRequest, message: "invalid_request", data: `{"detail":"method is required"}`,
			back: jsonrpc.ErrInvalidRequest, as: jsonrpc.RequestError{Detail: "method is required"},
		},
		{name: "method not found", err: fmt.Errorf("tool.frob: %w", jsonrpc.ErrMethodNotFound), code: jsonrpc.MethodNotFound, message: "method_not_found", back: jsonrpc.ErrMethodNotFound},
		{name: "invalid params", err: fmt.Errorf("tool.call: %w", jsonrpc.ErrInvalidParams), code: jsonrpc.InvalidParams, message: "invalid_params", back: jsonrpc.ErrInvalidParams, as: jsonrpc.ParamsError{}},
		{
			name: "params error", err: &jsonrpc.ParamsError{Field: "path", Detail: "wrong type, want string"},
			code: jsonrpc.InvalidParams, message: "invalid_params", data: `{"field":"path","detail":"wrong type, want string"}`,
			back: jsonrpc.ErrInvalidParams, as: jsonrpc.ParamsError{Field: "path", Detail: "wrong type, want string"},
		},
		{
			name: "frame too large is a request_too_large denial", err: fmt.Errorf("read: %w", tooBig),
			code: jsonrpc.InternalError, message: "request_too_large",
			data: fmt.Sprintf(`{"reason":"request_too_large","tool":"","skill_id":"","detail":%q}`, tooBig.Error()),
			back: enforce.ErrRequestTooLarge,
		},
		{
			name: "bare frame-too-large sentinel", err: jsonrpc.ErrFrameTooLarge,
			code: jsonrpc.InternalError, message: "request_too_large", data: `{"reason":"request_too_large","tool":"","skill_id":""}`,
			back: enforce.ErrRequestTooLarge,
		},
		{
			name: "any other error leaks nothing", err: errors.New("open /var/lib/skillrun/state.db: permission denied"),
			code: jsonrpc.InternalError, message: "internal_error", data: `{"reason":"internal"}`, back: jsonrpc.ErrInternal,
		},
		{name: "context error is internal", err: context.Canceled, code: jsonrpc.InternalError, message: "internal_error", data: `{"reason":"internal"}`, back: jsonrpc.ErrInternal},
		{name: "internal sentinel", err: jsonrpc.ErrInternal, code: jsonrpc.InternalError, message: "internal_error", data: `{"reason":"internal"}`, back: jsonrpc.ErrInternal},
		{name: "remote error passes through", err: fmt.Errorf("mcp: %w", custom), code: -32000, message: "upstream_busy", data: `{"retry_ms":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := jsonrpc.ErrorFromGo(tt.err)
			if e.Code != tt.code || e.Message != tt.message || !jsonEqual(t, e.Data, tt.data) {
				t.Fatalf("ErrorFromGo = {%d %q %s}, want {%d %q %s}", e.Code, e.Message, e.Data, tt.code, tt.message, tt.data)
			}
			err := jsonrpc.ErrorToGo(overWire(t, e))
			if tt.back != nil && !errors.Is(err, tt.back) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.back)
			}
			switch want := tt.as.(type) {
			case jsonrpc.RequestError:
				var got *jsonrpc.RequestError
				if !errors.As(err, &got) || !reflect.DeepEqual(*got, want) {
					t.Errorf("RequestError = %+v, want %+v", got, want)
				}
			case jsonrpc.ParamsError:
				var got *jsonrpc.ParamsError
				if !errors.As(err, &got) || *got != want {
					t.Errorf("ParamsError = %+v, want %+v", got, want)
				}
			}
		})
	}
}

func TestErrorToGoEdges(t *testing.T) {
	if err := jsonrpc.ErrorToGo(nil); err != nil {
		t.Errorf("ErrorToGo(nil) = %v, want nil", err)
	}
	if e := jsonrpc.ErrorFromGo(nil); e != nil {
		t.Errorf("ErrorFromGo(nil) = %+v, want nil", e)
	}

	// A reason this build does not know keeps its string and matches no
	// sentinel, as enforce documents.
	err := (&jsonrpc.Error{Code: jsonrpc.InternalError, Message: "new_class", Data: json.RawMessage(`{"reason":"from_the_future","tool":"X","skill_id":"s"}`)}).Err()
	d, ok := enforce.AsDenial(err)
	if !ok || d.Reason != "from_the_future" || d.Tool != "X" || d.SkillID != "s" {
		t.Errorf("unknown reason: AsDenial = %+v, %v", d, ok)
	}
	for _, r := range enforce.Reasons() {
		if errors.Is(err, r.Sentinel()) {
			t.Errorf("unknown reason matches %s", r)
		}
	}

	for _, data := range []string{``, `"text"`, `{"reason":""}`, `{"reason":"internal"}`} {
		err := (&jsonrpc.Error{Code: jsonrpc.InternalError, Message: "internal_error", Data: raw(data)}).Err()
		if !errors.Is(err, jsonrpc.ErrInternal) {
			t.Errorf("-32603 with data %q: %v does not match ErrInternal", data, err)
		}
		if _, ok := enforce.AsDenial(err); ok {
			t.Errorf("-32603 with data %q decoded as a denial", data)
		}
	}

	// A code of the application's own maps to no Go error but keeps its fields.
	err = (&jsonrpc.Error{Code: -32001, Message: "busy"}).Err()
	var re *jsonrpc.RemoteError
	if !errors.As(err, &re) || re.Code != -32001 || re.Message != "busy" || re.Unwrap() != nil {
		t.Errorf("custom code: %#v", err)
	}
}
