package sim

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The toy tokenizer. Its vocabulary has three parts:
//
//   - special tokens (ids 0..15): <pad>, the BOS token <s>, the EOS token </s> and the markers of
//     the chat template;
//   - whole lower-case English words from vocabulary, each in two forms: "word" (id
//     wordBase+2i) and " word" with one leading space (id wordBase+2i+1);
//   - one token per Unicode code point for everything else (id runeBase+codepoint).
//
// Encoding is greedy and deterministic: at each position a special token, else a maximal run of
// ASCII letters (with an optional single leading space) that is a vocabulary word, else one code
// point. Generated text only uses vocabulary words and punctuation code points, so encoding the
// generated text gives back exactly the generated ids.
const (
	padID      = 0
	bosID      = 1
	eosID      = 2
	wordBase   = 1000
	runeBase   = 100000
	maxTokenID = runeBase + utf8.MaxRune
)

// specialTokens are the special token strings by id; they are matched literally in text.
var specialTokens = []string{
	padID: "<pad>",
	bosID: "<s>",
	eosID: "</s>",
	3:     "<|system|>",
	4:     "<|user|>",
	5:     "<|assistant|>",
	6:     "<|end|>",
}

// vocabulary is the fixed word list of the toy tokenizer and of generated text. Order matters:
// ids derive from positions, so only append to it.
var vocabulary = strings.Fields(`
the of and to in is it that was for on are as with his they at be this from have or by one had
not but what all were when we there can an your which their said if do will each about how up
out them then she many some so these would other into has more her two like him see time could
no make than first been its who now people my made over did down only way find use may water
long little very after words called just where most know get through back much go good new
write our me man too any day same right look think also around another came come work three
word must because does part even place well such here take why things help put years different
away again off went old number great tell men say small every found still between name should
home big give air line set own under read last never us left end along while might next sound
below saw something thought both few those always looked show large often together asked house
world going want school important until form food keep children feet land side without boy once
animals life enough took sometimes four head above kind began almost live page got earth need
far hand high year mother light parts country father let night following picture being study
second eyes soon times story boys since white days ever paper hard near sentence better best
across during today others however sure means knew try told young miles sun ways thing whole
hear example heard several change answer room sea against top turned learn point city play
toward five using himself usually money seen car morning order stream model token fast slow
hello hi cat dog sat question please thanks
`)

// punctuation are the code points generated text mixes in between words.
var punctuation = []string{".", ","}

// tokenizer encodes and decodes text with the toy vocabulary.
type tokenizer struct {
	words  map[string]int // "word" and " word" → id
	byID   []string       // word ids - wordBase → text
	maxLen int            // longest special token, in bytes
}

// newTokenizer builds the toy tokenizer. It panics on a duplicate word, which is a programming
// error in vocabulary.
func newTokenizer() *tokenizer {
	t := &tokenizer{words: make(map[string]int, 2*len(vocabulary))}
	for i, w := range vocabulary {
		if _, dup := t.words[w]; dup {
			panic("sim: duplicate vocabulary word " + w)
		}
		t.words[w] = wordBase + 2*i
		t.words[" "+w] = wordBase + 2*i + 1
		t.byID = append(t.byID, w, " "+w)
	}
	for _, s := range specialTokens {
		t.maxLen = max(t.maxLen, len(s))
	}
	return t
}

// encode returns the token ids of text, preceded by the BOS token when addSpecial is true.
func (t *tokenizer) encode(text string, addSpecial bool) []int {
	ids := make([]int, 0, len(text)/4+2)
	if addSpecial {
		ids = append(ids, bosID)
	}
	i := 0
outer:
	for i < len(text) {
		if text[i] == '<' {
			for id, s := range specialTokens {
				if s != "" && strings.HasPrefix(text[i:], s) {
					ids = append(ids, id)
					i += len(s)
					continue outer
				}
			}
		}
		j := i
		if text[j] == ' ' {
			j++
		}
		k := j
		for k < len(text) && isASCIILetter(text[k]) {
			k++
		}
		if k > j {
			if id, ok := t.words[text[i:k]]; ok {
				ids = append(ids, id)
				i = k
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		ids = append(ids, runeBase+int(r))
		i += size
	}
	return ids
}

// count returns the number of tokens of text.
func (t *tokenizer) count(text string, addSpecial bool) int { return len(t.encode(text, addSpecial)) }

// piece returns the text of one token id.
func (t *tokenizer) piece(id int) (string, error) {
	switch {
	case id >= 0 && id < len(specialTokens) && specialTokens[id] != "":
		return specialTokens[id], nil
	case id >= wordBase && id < wordBase+len(t.byID):
		return t.byID[id-wordBase], nil
	case id >= runeBase && id <= maxTokenID:
		r := rune(id - runeBase)
		if !utf8.ValidRune(r) {
			return "", fmt.Errorf("token id %d is not in the vocabulary", id)
		}
		return string(r), nil
	}
	return "", fmt.Errorf("token id %d is not in the vocabulary", id)
}

// decode returns the text of ids. Special tokens are kept unless skipSpecial is set (the EOS
// token never carries text in generated output; vLLM skips special tokens by default there).
func (t *tokenizer) decode(ids []int, skipSpecial bool) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		if skipSpecial && id >= 0 && id < len(specialTokens) {
			continue
		}
		p, err := t.piece(id)
		if err != nil {
			return "", err
		}
		b.WriteString(p)
	}
	return b.String(), nil
}

// pieces returns the text of each id, for /tokenize's return_token_strs.
func (t *tokenizer) pieces(ids []int) ([]string, error) {
	out := make([]string, len(ids))
	for i, id := range ids {
		p, err := t.piece(id)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// wordID returns the id of vocabulary word i, with or without its leading space.
func wordID(i int, space bool) int {
	if space {
		return wordBase + 2*i + 1
	}
	return wordBase + 2*i
}

// punctID returns the id of punctuation mark i.
func punctID(i int) int {
	r, _ := utf8.DecodeRuneInString(punctuation[i])
	return runeBase + int(r)
}
