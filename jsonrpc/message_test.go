package jsonrpc_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/skillrun/skillrun/jsonrpc"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *jsonrpc.Request
		wantErr error
		errID   string // the id a RequestError carries, "" for none
		notify  bool
	}{
		{
			name: "call with object params",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{"tool":"Read"}}`,
			want: &jsonrpc.Request{JSONRPC: "2.0", ID: raw(`1`), Method: "tool.call", Params: raw(`{"tool":"Read"}`)},
		},
		{
			name: "string id, array params, members in any order",
			in:   ` { "params" : [1,2], "method":"m", "id":"call-123", "jsonrpc":"2.0" } `,
			want: &jsonrpc.Request{JSONRPC: "2.0", ID: raw(`"call-123"`), Method: "m", Params: raw(`[1,2]`)},
		},
		{
			name: "null id is a request, not a notification",
			in:   `{"jsonrpc":"2.0","id":null,"method":"m"}`,
			want: &jsonrpc.Request{JSONRPC: "2.0", ID: raw(`null`), Method: "m"},
		},
		{
			name:   "absent id is a notification",
			in:     `{"jsonrpc":"2.0","method":"m"}`,
			want:   &jsonrpc.Request{JSONRPC: "2.0", Method: "m"},
			notify: true,
		},
		{
			name: "negative fractional id",
			in:   `{"jsonrpc":"2.0","id":-1.5,"method":"m"}`,
			want: &jsonrpc.Request{JSONRPC: "2.0", ID: raw(`-1.5`), Method: "m"},
		},
		{
			name: "unknown members are ignored",
			in:   `{"jsonrpc":"2.0","id":2,"method":"m","x-trace":{"a":1}}`,
			want: &jsonrpc.Request{JSONRPC: "2.0", ID: raw(`2`), Method: "m"},
		},
		{name: "not JSON", in: `{"jsonrpc":`, wantErr: jsonrpc.ErrParse},
		{name: "empty", in: ``, wantErr: jsonrpc.ErrParse},
		{name: "not UTF-8", in: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\"}", wantErr: jsonrpc.ErrParse},
		{name: "a number", in: `42`, wantErr: jsonrpc.ErrInvalidRequest},
		{name: "an array", in: `[{"jsonrpc":"2.0","method":"m"}]`, wantErr: jsonrpc.ErrInvalidRequest},
		{name: "no jsonrpc", in: `{"id":1,"method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "wrong version", in: `{"jsonrpc":"1.0","id":1,"method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "version as a number", in: `{"jsonrpc":2.0,"id":1,"method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "no method", in: `{"jsonrpc":"2.0","id":"a"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `"a"`},
		{name: "method not a string", in: `{"jsonrpc":"2.0","id":1,"method":1}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{},"method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest},
		{name: "boolean id", in: `{"jsonrpc":"2.0","id":true,"method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest},
		{name: "string params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "null params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "duplicate method", in: `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
		{name: "member names are case-sensitive", in: `{"jsonrpc":"2.0","id":1,"Method":"m"}`, wantErr: jsonrpc.ErrInvalidRequest, errID: `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonrpc.DecodeRequest([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("DecodeRequest error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				var re *jsonrpc.RequestError
				if errors.As(err, &re) && string(re.ID) != tt.errID {
					t.Errorf("RequestError.ID = %s, want %q", re.ID, tt.errID)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeRequest = %+v, want %+v", got, tt.want)
			}
			if got.IsNotification() != tt.notify {
				t.Errorf("IsNotification = %v, want %v", got.IsNotification(), tt.notify)
			}
		})
	}
}

// The Request type marshals back to what DecodeRequest accepts, keeping
// absent and null ids apart.
func TestRequestRoundTrip(t *testing.T) {
	for _, req := range []jsonrpc.Request{
		{JSONRPC: "2.0", ID: raw(`7`), Method: "tool.list"},
		{JSONRPC: "2.0", ID: raw(`null`), Method: "m", Params: raw(`[1]`)},
		{JSONRPC: "2.0", Method: "notify", Params: raw(`{"a":"b"}`)},
	} {
		b, err := json.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonrpc.DecodeRequest(b)
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", b, err)
		}
		if !reflect.DeepEqual(*got, req) {
			t.Errorf("round trip of %s = %+v, want %+v", b, *got, req)
		}
	}
}

func TestDecodeParams(t *testing.T) {
	type args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
		Tags  []string
	}
	tests := []struct {
		name   string
		params string
		want   args
		err    *jsonrpc.ParamsError
	}{
		{name: "fits", params: `{"path":"/a","limit":3}`, want: args{Path: "/a", Limit: 3}},
		{name: "absent leaves defaults", params: ``, want: args{}},
		{name: "wrong type", params: `{"path":"/a","limit":"3"}`, err: &jsonrpc.ParamsError{Field: "limit", Detail: "wrong type, want number"}},
		{name: "unknown field", params: `{"path":"/a","lmit":3}`, err: &jsonrpc.ParamsError{Field: "lmit", Detail: "unknown field"}},
		{name: "array for an object", params: `[1]`, err: &jsonrpc.ParamsError{Detail: "wrong type, want object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got args
			err := jsonrpc.DecodeParams(raw(tt.params), &got)
			if tt.err == nil {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("DecodeParams = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var pe *jsonrpc.ParamsError
			if !errors.As(err, &pe) || !errors.Is(err, jsonrpc.ErrInvalidParams) {
				t.Fatalf("DecodeParams error = %v, want a ParamsError", err)
			}
			if *pe != *tt.err {
				t.Errorf("ParamsError = %+v, want %+v", *pe, *tt.err)
			}
		})
	}
}

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// DecodeParams reuses its decoders; whatever one decoded last, failed on
// or left unread must not show in the next.
func TestDecodeParamsReuse(t *testing.T) {
	type args struct {
		Path string `json:"path"`
		N    int    `json:"n"`
	}
	for i, tt := range []struct {
		params string
		want   args
		err    bool
	}{
		{params: `{"path":"/a","n":1}`, want: args{"/a", 1}},
		{params: `{"path":"/b"}  `, want: args{Path: "/b"}},
		{params: `{"n":2}`, want: args{N: 2}},
		{params: `{"n":"x"}`, err: true},
		{params: `{"path":"/c"} {"n":9}`, want: args{Path: "/c"}},
		{params: `{"n":3}`, want: args{N: 3}},
		{params: `{"path":`, err: true},
		{params: `{"path":"/d","n":4}`, want: args{"/d", 4}},
	} {
		var got args
		err := jsonrpc.DecodeParams(raw(tt.params), &got)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("%d: DecodeParams(%s) = %+v, %v", i, tt.params, got, err)
		}
	}
}
