// Functions of one shape in many sizes, for the tests of return probes on every epilogue.

package target

// Epi00..Epi63 are one function of three returns in 64 sizes (a local array of 2 to
// 21 words, constants of imm8 and imm32 width), so that across them the epilogue takes
// every shape amd64's assembler gives it: ADDQ $imm8 and $imm32, SUBQ $-128 (a
// frame of exactly 128 bytes: asm6.go encodes ADDQ $128 so), and NOPs between POPQ BP
// and RET (the padding that keeps a RET from ending on a 32-byte boundary, the JCC
// erratum), which falls where a return's address happens to land. EpiWant is what
// each returns.

//go:noinline
func Epi00(x int) int {
	var buf [2]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 1)
	}
	if x%3 == 1 {
		return buf[1] + Leaf(x, 2) + 0
	}
	return Leaf(buf[x%2], x) - 0
}

//go:noinline
func Epi01(x int) int {
	var buf [3]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 14)
	}
	if x%3 == 1 {
		return buf[2] + Leaf(x, 2) + 1001
	}
	return Leaf(buf[x%3], x) - 37
}

//go:noinline
func Epi02(x int) int {
	var buf [4]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 27)
	}
	if x%3 == 1 {
		return buf[3] + Leaf(x, 2) + 2002
	}
	return Leaf(buf[x%4], x) - 74
}

//go:noinline
func Epi03(x int) int {
	var buf [5]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 40)
	}
	if x%3 == 1 {
		return buf[4] + Leaf(x, 2) + 3003
	}
	return Leaf(buf[x%5], x) - 111
}

//go:noinline
func Epi04(x int) int {
	var buf [6]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 53)
	}
	if x%3 == 1 {
		return buf[5] + Leaf(x, 2) + 4004
	}
	return Leaf(buf[x%6], x) - 148
}

//go:noinline
func Epi05(x int) int {
	var buf [7]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 66)
	}
	if x%3 == 1 {
		return buf[6] + Leaf(x, 2) + 5005
	}
	return Leaf(buf[x%7], x) - 185
}

//go:noinline
func Epi06(x int) int {
	var buf [8]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 79)
	}
	if x%3 == 1 {
		return buf[7] + Leaf(x, 2) + 6006
	}
	return Leaf(buf[x%8], x) - 222
}

//go:noinline
func Epi07(x int) int {
	var buf [9]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 92)
	}
	if x%3 == 1 {
		return buf[8] + Leaf(x, 2) + 7007
	}
	return Leaf(buf[x%9], x) - 259
}

//go:noinline
func Epi08(x int) int {
	var buf [10]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 105)
	}
	if x%3 == 1 {
		return buf[9] + Leaf(x, 2) + 8008
	}
	return Leaf(buf[x%10], x) - 296
}

//go:noinline
func Epi09(x int) int {
	var buf [11]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 118)
	}
	if x%3 == 1 {
		return buf[10] + Leaf(x, 2) + 9009
	}
	return Leaf(buf[x%11], x) - 333
}

//go:noinline
func Epi10(x int) int {
	var buf [12]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 131)
	}
	if x%3 == 1 {
		return buf[11] + Leaf(x, 2) + 10010
	}
	return Leaf(buf[x%12], x) - 370
}

//go:noinline
func Epi11(x int) int {
	var buf [13]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 144)
	}
	if x%3 == 1 {
		return buf[12] + Leaf(x, 2) + 11011
	}
	return Leaf(buf[x%13], x) - 407
}

//go:noinline
func Epi12(x int) int {
	var buf [14]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 157)
	}
	if x%3 == 1 {
		return buf[13] + Leaf(x, 2) + 12012
	}
	return Leaf(buf[x%14], x) - 444
}

//go:noinline
func Epi13(x int) int {
	var buf [15]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 170)
	}
	if x%3 == 1 {
		return buf[14] + Leaf(x, 2) + 13013
	}
	return Leaf(buf[x%15], x) - 481
}

//go:noinline
func Epi14(x int) int {
	var buf [16]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 183)
	}
	if x%3 == 1 {
		return buf[15] + Leaf(x, 2) + 14014
	}
	return Leaf(buf[x%16], x) - 518
}

//go:noinline
func Epi15(x int) int {
	var buf [17]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 196)
	}
	if x%3 == 1 {
		return buf[16] + Leaf(x, 2) + 15015
	}
	return Leaf(buf[x%17], x) - 555
}

//go:noinline
func Epi16(x int) int {
	var buf [18]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 209)
	}
	if x%3 == 1 {
		return buf[17] + Leaf(x, 2) + 16016
	}
	return Leaf(buf[x%18], x) - 592
}

//go:noinline
func Epi17(x int) int {
	var buf [19]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 222)
	}
	if x%3 == 1 {
		return buf[18] + Leaf(x, 2) + 17017
	}
	return Leaf(buf[x%19], x) - 629
}

//go:noinline
func Epi18(x int) int {
	var buf [20]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 235)
	}
	if x%3 == 1 {
		return buf[19] + Leaf(x, 2) + 18018
	}
	return Leaf(buf[x%20], x) - 666
}

//go:noinline
func Epi19(x int) int {
	var buf [21]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 248)
	}
	if x%3 == 1 {
		return buf[20] + Leaf(x, 2) + 19019
	}
	return Leaf(buf[x%21], x) - 703
}

//go:noinline
func Epi20(x int) int {
	var buf [2]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 261)
	}
	if x%3 == 1 {
		return buf[1] + Leaf(x, 2) + 20020
	}
	return Leaf(buf[x%2], x) - 740
}

//go:noinline
func Epi21(x int) int {
	var buf [3]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 274)
	}
	if x%3 == 1 {
		return buf[2] + Leaf(x, 2) + 21021
	}
	return Leaf(buf[x%3], x) - 777
}

//go:noinline
func Epi22(x int) int {
	var buf [4]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 287)
	}
	if x%3 == 1 {
		return buf[3] + Leaf(x, 2) + 22022
	}
	return Leaf(buf[x%4], x) - 814
}

//go:noinline
func Epi23(x int) int {
	var buf [5]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 300)
	}
	if x%3 == 1 {
		return buf[4] + Leaf(x, 2) + 23023
	}
	return Leaf(buf[x%5], x) - 851
}

//go:noinline
func Epi24(x int) int {
	var buf [6]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 313)
	}
	if x%3 == 1 {
		return buf[5] + Leaf(x, 2) + 24024
	}
	return Leaf(buf[x%6], x) - 888
}

//go:noinline
func Epi25(x int) int {
	var buf [7]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 326)
	}
	if x%3 == 1 {
		return buf[6] + Leaf(x, 2) + 25025
	}
	return Leaf(buf[x%7], x) - 925
}

//go:noinline
func Epi26(x int) int {
	var buf [8]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 339)
	}
	if x%3 == 1 {
		return buf[7] + Leaf(x, 2) + 26026
	}
	return Leaf(buf[x%8], x) - 962
}

//go:noinline
func Epi27(x int) int {
	var buf [9]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 352)
	}
	if x%3 == 1 {
		return buf[8] + Leaf(x, 2) + 27027
	}
	return Leaf(buf[x%9], x) - 999
}

//go:noinline
func Epi28(x int) int {
	var buf [10]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 365)
	}
	if x%3 == 1 {
		return buf[9] + Leaf(x, 2) + 28028
	}
	return Leaf(buf[x%10], x) - 1036
}

//go:noinline
func Epi29(x int) int {
	var buf [11]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 378)
	}
	if x%3 == 1 {
		return buf[10] + Leaf(x, 2) + 29029
	}
	return Leaf(buf[x%11], x) - 1073
}

//go:noinline
func Epi30(x int) int {
	var buf [12]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 391)
	}
	if x%3 == 1 {
		return buf[11] + Leaf(x, 2) + 30030
	}
	return Leaf(buf[x%12], x) - 1110
}

//go:noinline
func Epi31(x int) int {
	var buf [13]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 404)
	}
	if x%3 == 1 {
		return buf[12] + Leaf(x, 2) + 31031
	}
	return Leaf(buf[x%13], x) - 1147
}

//go:noinline
func Epi32(x int) int {
	var buf [14]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 417)
	}
	if x%3 == 1 {
		return buf[13] + Leaf(x, 2) + 32032
	}
	return Leaf(buf[x%14], x) - 1184
}

//go:noinline
func Epi33(x int) int {
	var buf [15]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 430)
	}
	if x%3 == 1 {
		return buf[14] + Leaf(x, 2) + 33033
	}
	return Leaf(buf[x%15], x) - 1221
}

//go:noinline
func Epi34(x int) int {
	var buf [16]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 443)
	}
	if x%3 == 1 {
		return buf[15] + Leaf(x, 2) + 34034
	}
	return Leaf(buf[x%16], x) - 1258
}

//go:noinline
func Epi35(x int) int {
	var buf [17]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 456)
	}
	if x%3 == 1 {
		return buf[16] + Leaf(x, 2) + 35035
	}
	return Leaf(buf[x%17], x) - 1295
}

//go:noinline
func Epi36(x int) int {
	var buf [18]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 469)
	}
	if x%3 == 1 {
		return buf[17] + Leaf(x, 2) + 36036
	}
	return Leaf(buf[x%18], x) - 1332
}

//go:noinline
func Epi37(x int) int {
	var buf [19]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 482)
	}
	if x%3 == 1 {
		return buf[18] + Leaf(x, 2) + 37037
	}
	return Leaf(buf[x%19], x) - 1369
}

//go:noinline
func Epi38(x int) int {
	var buf [20]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 495)
	}
	if x%3 == 1 {
		return buf[19] + Leaf(x, 2) + 38038
	}
	return Leaf(buf[x%20], x) - 1406
}

//go:noinline
func Epi39(x int) int {
	var buf [21]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 508)
	}
	if x%3 == 1 {
		return buf[20] + Leaf(x, 2) + 39039
	}
	return Leaf(buf[x%21], x) - 1443
}

//go:noinline
func Epi40(x int) int {
	var buf [2]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 521)
	}
	if x%3 == 1 {
		return buf[1] + Leaf(x, 2) + 40040
	}
	return Leaf(buf[x%2], x) - 1480
}

//go:noinline
func Epi41(x int) int {
	var buf [3]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 534)
	}
	if x%3 == 1 {
		return buf[2] + Leaf(x, 2) + 41041
	}
	return Leaf(buf[x%3], x) - 1517
}

//go:noinline
func Epi42(x int) int {
	var buf [4]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 547)
	}
	if x%3 == 1 {
		return buf[3] + Leaf(x, 2) + 42042
	}
	return Leaf(buf[x%4], x) - 1554
}

//go:noinline
func Epi43(x int) int {
	var buf [5]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 560)
	}
	if x%3 == 1 {
		return buf[4] + Leaf(x, 2) + 43043
	}
	return Leaf(buf[x%5], x) - 1591
}

//go:noinline
func Epi44(x int) int {
	var buf [6]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 573)
	}
	if x%3 == 1 {
		return buf[5] + Leaf(x, 2) + 44044
	}
	return Leaf(buf[x%6], x) - 1628
}

//go:noinline
func Epi45(x int) int {
	var buf [7]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 586)
	}
	if x%3 == 1 {
		return buf[6] + Leaf(x, 2) + 45045
	}
	return Leaf(buf[x%7], x) - 1665
}

//go:noinline
func Epi46(x int) int {
	var buf [8]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 599)
	}
	if x%3 == 1 {
		return buf[7] + Leaf(x, 2) + 46046
	}
	return Leaf(buf[x%8], x) - 1702
}

//go:noinline
func Epi47(x int) int {
	var buf [9]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 612)
	}
	if x%3 == 1 {
		return buf[8] + Leaf(x, 2) + 47047
	}
	return Leaf(buf[x%9], x) - 1739
}

//go:noinline
func Epi48(x int) int {
	var buf [10]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 625)
	}
	if x%3 == 1 {
		return buf[9] + Leaf(x, 2) + 48048
	}
	return Leaf(buf[x%10], x) - 1776
}

//go:noinline
func Epi49(x int) int {
	var buf [11]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 638)
	}
	if x%3 == 1 {
		return buf[10] + Leaf(x, 2) + 49049
	}
	return Leaf(buf[x%11], x) - 1813
}

//go:noinline
func Epi50(x int) int {
	var buf [12]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 651)
	}
	if x%3 == 1 {
		return buf[11] + Leaf(x, 2) + 50050
	}
	return Leaf(buf[x%12], x) - 1850
}

//go:noinline
func Epi51(x int) int {
	var buf [13]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 664)
	}
	if x%3 == 1 {
		return buf[12] + Leaf(x, 2) + 51051
	}
	return Leaf(buf[x%13], x) - 1887
}

//go:noinline
func Epi52(x int) int {
	var buf [14]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 677)
	}
	if x%3 == 1 {
		return buf[13] + Leaf(x, 2) + 52052
	}
	return Leaf(buf[x%14], x) - 1924
}

//go:noinline
func Epi53(x int) int {
	var buf [15]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 690)
	}
	if x%3 == 1 {
		return buf[14] + Leaf(x, 2) + 53053
	}
	return Leaf(buf[x%15], x) - 1961
}

//go:noinline
func Epi54(x int) int {
	var buf [16]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 703)
	}
	if x%3 == 1 {
		return buf[15] + Leaf(x, 2) + 54054
	}
	return Leaf(buf[x%16], x) - 1998
}

//go:noinline
func Epi55(x int) int {
	var buf [17]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 716)
	}
	if x%3 == 1 {
		return buf[16] + Leaf(x, 2) + 55055
	}
	return Leaf(buf[x%17], x) - 2035
}

//go:noinline
func Epi56(x int) int {
	var buf [18]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 729)
	}
	if x%3 == 1 {
		return buf[17] + Leaf(x, 2) + 56056
	}
	return Leaf(buf[x%18], x) - 2072
}

//go:noinline
func Epi57(x int) int {
	var buf [19]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 742)
	}
	if x%3 == 1 {
		return buf[18] + Leaf(x, 2) + 57057
	}
	return Leaf(buf[x%19], x) - 2109
}

//go:noinline
func Epi58(x int) int {
	var buf [20]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 755)
	}
	if x%3 == 1 {
		return buf[19] + Leaf(x, 2) + 58058
	}
	return Leaf(buf[x%20], x) - 2146
}

//go:noinline
func Epi59(x int) int {
	var buf [21]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 768)
	}
	if x%3 == 1 {
		return buf[20] + Leaf(x, 2) + 59059
	}
	return Leaf(buf[x%21], x) - 2183
}

//go:noinline
func Epi60(x int) int {
	var buf [2]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 781)
	}
	if x%3 == 1 {
		return buf[1] + Leaf(x, 2) + 60060
	}
	return Leaf(buf[x%2], x) - 2220
}

//go:noinline
func Epi61(x int) int {
	var buf [3]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 794)
	}
	if x%3 == 1 {
		return buf[2] + Leaf(x, 2) + 61061
	}
	return Leaf(buf[x%3], x) - 2257
}

//go:noinline
func Epi62(x int) int {
	var buf [4]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 807)
	}
	if x%3 == 1 {
		return buf[3] + Leaf(x, 2) + 62062
	}
	return Leaf(buf[x%4], x) - 2294
}

//go:noinline
func Epi63(x int) int {
	var buf [5]int
	for j := range buf {
		buf[j] = x + j
	}
	if x < 0 {
		return Leaf(buf[0], 820)
	}
	if x%3 == 1 {
		return buf[4] + Leaf(x, 2) + 63063
	}
	return Leaf(buf[x%5], x) - 2331
}

// Epis are Epi00..Epi63 in order.
var Epis = [...]func(int) int{Epi00, Epi01, Epi02, Epi03, Epi04, Epi05, Epi06, Epi07, Epi08, Epi09, Epi10, Epi11, Epi12, Epi13, Epi14, Epi15, Epi16, Epi17, Epi18, Epi19, Epi20, Epi21, Epi22, Epi23, Epi24, Epi25, Epi26, Epi27, Epi28, Epi29, Epi30, Epi31, Epi32, Epi33, Epi34, Epi35, Epi36, Epi37, Epi38, Epi39, Epi40, Epi41, Epi42, Epi43, Epi44, Epi45, Epi46, Epi47, Epi48, Epi49, Epi50, Epi51, Epi52, Epi53, Epi54, Epi55, Epi56, Epi57, Epi58, Epi59, Epi60, Epi61, Epi62, Epi63}

// EpiWant is what Epis[i](x) returns.
func EpiWant(i, x int) int {
	k := 2 + i%20
	switch {
	case x < 0:
		return x*(i*13+1) + x
	case x%3 == 1:
		return x + k - 1 + 3*x + i*1000 + i
	}
	v := x + x%k
	return v*x + v - i*37
}
