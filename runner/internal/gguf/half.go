package gguf

import "math"

// HalfFromFloat32 converts f to IEEE 754 binary16 bits, rounding to nearest with ties to
// even, as ggml's F16 tensors store it. Values beyond the half range become infinities, values
// below its smallest subnormal become signed zeros, and a NaN stays a (quiet) NaN.
func HalfFromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		// A half subnormal is m·2⁻²⁴; with the implicit bit restored the float's value is
		// mant·2^(exp−150), so m is mant shifted right by 14−e.
		mant |= 0x800000
		shift := uint(14 - e)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	// A carry out of the mantissa correctly bumps the exponent (and the largest finite values
	// round up to infinity).
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++
	}
	return sign | uint16(half)
}

// Float32FromHalf converts IEEE 754 binary16 bits to a float32, exactly.
func Float32FromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			return -v
		}
		return v
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}
