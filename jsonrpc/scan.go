package jsonrpc

// A scanner that finds where the members of a JSON object and their values
// begin and end, without decoding them: the request envelope is four
// members, and decoding it through encoding/json's tokenizer cost more
// allocations than everything else in a call. It is meant for text
// validJSON has accepted; every index is still checked, so other text
// gives ok false, never a panic or a read out of bounds.

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace, or len(data).
func skipSpace(data []byte, i int) int {
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string whose opening quote
// is data[i], and whether it holds an escape.
func skipString(data []byte, i int) (end int, escaped, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false, false
	}
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			return j + 1, escaped, true
		case '\\':
			escaped = true
			j++ // the escaped byte cannot end the string
		}
	}
	return 0, false, false
}

// skipValue returns the index just past the value that starts at data[i].
func skipValue(data []byte, i int) (end int, ok bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		end, _, ok := skipString(data, i)
		return end, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _, ok := skipString(data, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	// A number or a literal: it runs to the next delimiter.
	j := i
	for ; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ':', '"', '{', '[', ' ', '\t', '\r', '\n':
			return j, j > i
		}
	}
	return j, j > i
}

// member is one member of an object as nextMember finds it: the key's
// text with its quotes, whether the key holds an escape, and the value's
// text.
type member struct {
	key     []byte
	escaped bool
	value   []byte
}

// nextMember reads the member that starts at data[i] (the first byte after
// '{' or ',' and whitespace) and returns the index of what follows it: the
// next member, after its ',' and whitespace, or the closing '}'.
func nextMember(data []byte, i int) (m member, next int, ok bool) {
	end, escaped, ok := skipString(data, i)
	if !ok {
		return member{}, 0, false
	}
	m.key, m.escaped = data[i:end], escaped
	j := skipSpace(data, end)
	if j >= len(data) || data[j] != ':' {
		return member{}, 0, false
	}
	j = skipSpace(data, j+1)
	end, ok = skipValue(data, j)
	if !ok {
		return member{}, 0, false
	}
	m.value = data[j:end]
	j = skipSpace(data, end)
	if j < len(data) && data[j] == ',' {
		j = skipSpace(data, j+1)
	}
	return m, j, true
}
