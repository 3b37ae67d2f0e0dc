package chart

// asciiAdvance holds the advance widths, in thousandths of an em, of the printable ASCII
// characters (space to tilde) in Liberation Sans, which shares its widths with Arial and
// Helvetica: an SVG viewer that has any of them draws text as wide as this estimates.
var asciiAdvance = [95]uint16{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // space to /
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, // 0 to 9
	278, 278, 584, 584, 584, 556, 1015, // : to @
	667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, // A to M
	722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, // N to Z
	278, 278, 278, 469, 556, 333, // [ to `
	556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, // a to m
	556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, // n to z
	334, 260, 334, 584, // { to ~
}

// otherAdvance holds the widths of the characters beyond ASCII that the charts use.
var otherAdvance = map[rune]uint16{
	'°': 400, '·': 278, '×': 584, '–': 556, '—': 1000, '−': 584, '≈': 584, '≤': 584, '≥': 584,
	'µ': 556, '…': 1000, '‘': 222, '’': 222, '“': 333, '”': 333,
}

// defaultAdvance is the width assumed for a character in neither table: that of a digit.
const defaultAdvance = 556

// sansWidth returns the width of text at size points in Liberation Sans, without kerning.
func sansWidth(text string, size float64) float64 {
	total := 0
	for _, r := range text {
		switch {
		case r >= ' ' && r <= '~':
			total += int(asciiAdvance[r-' '])
		case otherAdvance[r] > 0:
			total += int(otherAdvance[r])
		default:
			total += defaultAdvance
		}
	}
	return float64(total) * size / 1000
}
