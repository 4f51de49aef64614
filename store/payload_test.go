package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCompletePayload(t *testing.T) {
	const ids = `"invocation_id":"i","skill_id":"s","trace_id":"t"`
	tests := []struct {
		payload string
		want    bool
	}{
		{`{` + ids + `}`, true},
		{`{"a":[1,{"b":"x y"}],` + ids + `,"c":{"invocation_id":1}}`, true},
		{`{"a":1,"invocation_id":"i","skill_id":"s"}`, false},
		{`{"a":{"invocation_id":"i","skill_id":"s","trace_id":"t"}}`, false},
		{`{"a":["invocation_id","skill_id","trace_id"]}`, false},
		{`{"k":"invocation_id","skill_id":1,"trace_id":2}`, false},
		{`{` + ids + `,"trace_id":"u"}`, false},
		{`{ ` + ids + `}`, false},
		{`{` + ids + `,"a":"\u003c"}`, false},
		{`{"invocation\u005fid":"i","skill_id":"s","trace_id":"t"}`, false},
		{`{}`, false},
	}
	for _, tt := range tests {
		if got := completePayload([]byte(tt.payload)); got != tt.want {
			t.Errorf("completePayload(%s) = %v, want %v", tt.payload, got, tt.want)
		}
	}
}

// A payload completePayload accepts is bound without json_insert; that is
// only right if json_insert would have given it back byte for byte.
func TestCompletePayloadIsKept(t *testing.T) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		p := randomPayload(rng)
		if !completePayload([]byte(p)) {
			t.Fatalf("generated payload not complete: %s", p)
		}
		var got string
		err := s.db.QueryRowContext(t.Context(),
			`SELECT json_insert(?1, '$.invocation_id', 'x', '$.skill_id', 'y', '$.trace_id', 'z')`, p).Scan(&got)
		if err != nil {
			t.Fatalf("payload %d %s: %v", i, p, err)
		}
		if got != p {
			t.Fatalf("json_insert changed\n%s\ninto\n%s", p, got)
		}
	}
}

// randomPayload is a compact object without escapes that has the three
// ids, among members of every JSON kind, nested, in random order.
func randomPayload(rng *rand.Rand) string {
	members := []string{`"invocation_id":` + randomValue(rng, 0), `"skill_id":` + randomValue(rng, 0), `"trace_id":` + randomValue(rng, 0)}
	for range rng.IntN(6) {
		members = append(members, randomString(rng)+":"+randomValue(rng, 0))
	}
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

var numbers = []string{"0", "-0", "7", "-12", "1.50", "0.000", "1e3", "1E+400", "-2.5e-7", "123456789012345678901234567890", "9223372036854775808", "3.141592653589793238462643383279"}

func randomValue(rng *rand.Rand, depth int) string {
	k := rng.IntN(7)
	if depth > 2 {
		k %= 4
	}
	switch k {
	case 0:
		return randomString(rng)
	case 1:
		return numbers[rng.IntN(len(numbers))]
	case 2:
		return []string{"true", "false", "null"}[rng.IntN(3)]
	case 3:
		return `""`
	case 4:
		var items []string
		for range rng.IntN(4) {
			items = append(items, randomValue(rng, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var members []string
	for range rng.IntN(4) {
		members = append(members, randomString(rng)+":"+randomValue(rng, depth+1))
	}
	if rng.IntN(4) == 0 && len(members) > 0 {
		members = append(members, members[0]) // a repeated key
	}
	return "{" + strings.Join(members, ",") + "}"
}

// randomString is a JSON string of characters that need no escape: ASCII,
// spaces, "<&>", multi-byte runes (U+2028 among them), DEL, and now and
// then bytes that are not UTF-8, which SQLite keeps as they are too.
func randomString(rng *rand.Rand) string {
	const chars = "abcXYZ019 <&>/'{}[]:,é€\u2028\U0001F600\u00a0"
	runes := []rune(chars)
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	if rng.IntN(8) == 0 {
		b.WriteString("\x7f\xff\xc3") // DEL, and bytes that are not UTF-8
	}
	return fmt.Sprintf(`"%s"`, b.String())
}
