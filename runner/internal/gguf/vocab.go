package gguf

import (
	"slices"
	"strings"
)

// Token types as llama.cpp's vocabulary loader reads them from tokenizer.ggml.token_type.
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// The special token ids of the tiny model's vocabulary, in SentencePiece's usual places.
const (
	TokenUnknown = 0
	TokenBOS     = 1
	TokenEOS     = 2
)

// spaceMark is SentencePiece's visible space, U+2581, which starts every word-initial piece.
const spaceMark = "\u2581"

// words is the tiny model's whole-word vocabulary: common lowercase English words. Each one is
// a single token when it follows a space, so a prompt made of them has a known token count.
var words = strings.Fields(`
a about above across act add after again against age ago agree air all almost alone along
already also always am among an and animal another answer any appear are area arm around art as
ask at away back bad ball bank base be bear beat beautiful became because become bed been before
began begin behind being believe below best better between big bird black blue board boat body
book both box boy bread break bring brother brought brown build built but buy by call came can
car card care carry case cat catch cause center certain chair change check child children city
class clear close cold color come common company could country course cover cross cut dark day
deep did different do does dog done door down draw dream drive dry during each early earth east
easy eat edge egg end enough even evening ever every eye face fact fall family far farm fast
father feel feet few field fight fill final find fine fire first fish five floor fly follow food
foot for force form found four free friend from front full game garden gave get girl give glass
go gold gone good got great green ground group grow had half hand happen happy hard has have he
head hear heard heart heat heavy held help her here high hill him his hold home hope horse hot
hour house how however hundred idea if important in inside into is island it its just keep kept
kind king knew know land language large last late laugh lay lead learn least leave left leg less
let letter life light like line list listen little live long look lost lot love low made main
make man many map mark matter may me mean measure meet men might mile mind minute miss money moon
more morning most mother mountain move much music must my name near need never new next night no
north nothing notice now number object of off often oh old on once one only open or order other
our out over own page paper part party pass past people perhaps person picture piece place plain
plan plant play point poor position power present pretty problem pull put question quick quiet
rain ran reach read ready real reason red remember rest rich ride right river road rock room round
rule run said same sat saw say school sea second see seem seen self sell send sent set several
shall shape she ship short should show side sign simple since sing sit six size sky sleep slow
small snow so soft some something song soon sound south space speak special spring stand star
start state stay step still stone stood stop story street strong study such summer sun sure table
take talk tall teach tell ten than that the their them then there these they thing think this
those though thought three through time to today together told too took top toward town tree true
try turn two under until up upon us use usual very voice wait walk wall want war warm was watch
water wave way we wear weather week well went were west what wheel when where which while white
who whole why wide wife wild will wind window winter wish with without woman wood word work world
would write wrong year yellow yes yet you young your
`)

// sampledPunctuation are the single characters the model may generate besides whole words.
const sampledPunctuation = ".,;:!?"

// Words returns the whole-word vocabulary in order. Every word tokenizes to exactly one token
// when it is preceded by a space (or starts the text, since SentencePiece adds a leading space),
// so "the cat sat" is three tokens after the BOS token.
func Words() []string {
	return slices.Clone(words)
}

// vocab is a SentencePiece ("llama") vocabulary: the tokens, their scores and types, and which
// of them the output layer lets the model generate.
type vocab struct {
	tokens  []string
	scores  []float32
	types   []int32
	sampled []bool
}

// buildVocab lays the vocabulary out as llama's SentencePiece models do: <unk>, <s>, </s>, the 256
// byte-fallback tokens <0x00>..<0xFF> (so any text tokenizes, whatever its characters), then
// the visible space and every printable ASCII character, then every word-initial prefix of
// every word ("▁t", "▁th", "▁the"): llama.cpp's SentencePiece tokenizer builds a word only by
// merging adjacent pieces that are themselves tokens, so the prefixes are what makes "▁the"
// reachable from "▁", "t", "h", "e". Only whole words and a few punctuation marks are ever
// generated; special, byte and prefix tokens are unreachable by construction of the output
// layer.
func buildVocab() *vocab {
	v := &vocab{}
	add := func(tok string, typ int32, score float32, sampled bool) {
		v.tokens = append(v.tokens, tok)
		v.types = append(v.types, typ)
		v.scores = append(v.scores, score)
		v.sampled = append(v.sampled, sampled)
	}
	add("<unk>", tokenUnknown, 0, false)
	add("<s>", tokenControl, 0, false)
	add("</s>", tokenControl, 0, false)
	const hex = "0123456789ABCDEF"
	for b := range 256 {
		add("<0x"+string(hex[b>>4])+string(hex[b&15])+">", tokenByte, 0, false)
	}
	// Normal pieces are scored like SentencePiece's log-probabilities: earlier is likelier.
	var rank float32
	normal := func(tok string, sampled bool) {
		rank++
		add(tok, tokenNormal, -rank, sampled)
	}
	normal(spaceMark, false)
	for c := byte('!'); c <= '~'; c++ {
		normal(string(c), strings.IndexByte(sampledPunctuation, c) >= 0)
	}
	whole := make(map[string]bool, len(words))
	pieces := make(map[string]bool)
	for _, w := range words {
		whole[spaceMark+w] = true
		for i := 1; i <= len(w); i++ {
			pieces[spaceMark+w[:i]] = true
		}
	}
	sorted := make([]string, 0, len(pieces))
	for p := range pieces {
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	for _, p := range sorted {
		normal(p, whole[p])
	}
	return v
}
