#!/usr/bin/env python3
"""sim_gemm_layout.py — checks the index math of the GEMM kernels in src/codegen/prelude/cuda_gemm.h
without a GPU, by simulating one block tile in numpy with the PTX semantics of the instructions used.

Tensor-core kernel (lt_gemm_tc): where each thread's cp.async chunks land in shared memory (with the
XOR swizzle), which address each lane gives ldmatrix (x4, and .trans for a [k, n] B), what each lane
receives (PTX ISA: non-trans lane l holds row l/4, columns 2(l%4), 2(l%4)+1 of each 8x8 matrix; .trans
the transpose), the m16n8k16 fragment layouts of A, B and C, and the epilogue's (row, column) of each
accumulator: the product must equal A @ B exactly (small integers), for every configuration and both
B layouts; every 8-lane phase of the cp.async writes and the ldmatrix reads must hit 8 distinct 16-byte
bank groups (no bank conflicts). SIMT kernel (lt_gemm_simt): the tile loads, the transposed shared
layout and the 8x8 register tiles, with ragged edges.

The formulas below mirror the header's: change both together. Run: python3 tests/gpu/sim_gemm_layout.py
(numpy only; used when the kernels were written on a machine without a GPU).
"""
import numpy as np


def swz(CH, r, c):
    if CH >= 8: return c ^ (r & 7)
    if CH == 4: return c ^ ((r >> 1) & 3)
    if CH == 2: return c ^ ((r >> 2) & 1)
    return c
def run(BM, BN, BK, WM, WN, BT, M=None, N=None, K=None):
    WARPS_N = BN // WN; NT = 32 * (BM // WM) * (BN // WN); MT = WM // 16; NTL = WN // 8
    CHA = BK // 8; CHB = BK // 8 if BT else BN // 8; RB = BN if BT else BK
    A_PER = BM * CHA // NT; B_PER = RB * CHB // NT
    assert BM*CHA % NT == 0 and RB*CHB % NT == 0 and NT % CHA == 0 and NT % CHB == 0
    rng = np.random.default_rng(0)
    A = rng.integers(-3, 4, (BM, BK)).astype(np.float64)
    Bkn = rng.integers(-3, 4, (BK, BN)).astype(np.float64)
    Bg = Bkn.T.copy() if BT else Bkn   # global B layout
    smA = np.full(BM * BK, np.nan); smB = np.full(BK * BN, np.nan)   # in b16 elements
    written = set()
    for tid in range(NT):
        for i in range(A_PER):
            row = tid // CHA + i * (NT // CHA); c = tid % CHA
            off = (row * CHA + swz(CHA, row, c)) * 8
            assert ('A', off) not in written; written.add(('A', off))
            smA[off:off+8] = A[row, c*8:c*8+8]
        for i in range(B_PER):
            row = tid // CHB + i * (NT // CHB); c = tid % CHB
            off = (row * CHB + swz(CHB, row, c)) * 8
            assert ('B', off) not in written; written.add(('B', off))
            smB[off:off+8] = Bg[row, c*8:c*8+8]
    assert not np.isnan(smA).any() and not np.isnan(smB).any()
    # bank conflicts of the cp.async writes (8-thread phases of 16-byte chunks)
    def check_phases(addrs):   # addrs: list of 32 byte offsets, 16 bytes each
        for ph in range(4):
            groups = [(a // 16) % 8 for a in addrs[ph*8:ph*8+8]]
            assert len(set(groups)) == 8, groups
    for w in range(NT // 32):
        for i in range(A_PER):
            check_phases([((t // CHA + i*(NT//CHA)) * CHA + swz(CHA, t // CHA + i*(NT//CHA), t % CHA)) * 16 for t in range(w*32, w*32+32)])
        for i in range(B_PER):
            check_phases([((t // CHB + i*(NT//CHB)) * CHB + swz(CHB, t // CHB + i*(NT//CHB), t % CHB)) * 16 for t in range(w*32, w*32+32)])
    def ldsm(sm, addrs, trans):   # addrs: 32 byte offsets; returns regs[lane][4] as pairs
        mats = [np.array([sm[addrs[8*i+j]//2: addrs[8*i+j]//2 + 8] for j in range(8)]) for i in range(4)]
        for i in range(4): check_phases_ld(addrs[8*i:8*i+8])
        out = []
        for lane in range(32):
            regs = []
            for i in range(4):
                if not trans: regs.append((mats[i][lane//4, 2*(lane%4)], mats[i][lane//4, 2*(lane%4)+1]))
                else: regs.append((mats[i][2*(lane%4), lane//4], mats[i][2*(lane%4)+1, lane//4]))
            out.append(regs)
        return out
    def check_phases_ld(a8):
        groups = [(a // 16) % 8 for a in a8]
        assert len(set(groups)) == 8, ("ldmatrix conflict", groups)
    C = np.zeros((BM, BN))
    for warp in range(NT // 32):
        wm, wn = warp // WARPS_N, warp % WARPS_N
        acc = np.zeros((MT, NTL, 32, 4))
        for kk in range(BK // 16):
            af = [ldsm(smA, [((wm*WM + i*16 + (l & 15)) * CHA + swz(CHA, wm*WM + i*16 + (l & 15), kk*2 + (l >> 4))) * 16 for l in range(32)], False) for i in range(MT)]
            bf = [None] * NTL
            for j in range(NTL // 2):
                if BT:
                    addrs = []
                    for l in range(32):
                        row = wn*WN + j*16 + (l >> 4)*8 + (l & 7); c = kk*2 + ((l >> 3) & 1)
                        addrs.append((row * CHB + swz(CHB, row, c)) * 16)
                    r = ldsm(smB, addrs, False)
                else:
                    addrs = []
                    for l in range(32):
                        row = kk*16 + (l & 7) + ((l >> 3) & 1)*8; c = (wn*WN + j*16)//8 + (l >> 4)
                        addrs.append((row * CHB + swz(CHB, row, c)) * 16)
                    r = ldsm(smB, addrs, True)
                bf[2*j] = [[r[l][0], r[l][1]] for l in range(32)]
                bf[2*j+1] = [[r[l][2], r[l][3]] for l in range(32)]
            for i in range(MT):
                for j in range(NTL):
                    # reconstruct the 16x16 A and 16x8 B from fragments per PTX layout, then multiply
                    Af = np.zeros((16, 16)); Bf = np.zeros((16, 8))
                    for l in range(32):
                        g, t = l // 4, l % 4
                        a = af[i][l]
                        Af[g, 2*t:2*t+2] = a[0]; Af[g+8, 2*t:2*t+2] = a[1]
                        Af[g, 2*t+8:2*t+10] = a[2]; Af[g+8, 2*t+8:2*t+10] = a[3]
                        b = bf[j][l]
                        Bf[2*t:2*t+2, g] = b[0]; Bf[2*t+8:2*t+10, g] = b[1]
                    D = Af @ Bf
                    for l in range(32):
                        g, t = l // 4, l % 4
                        acc[i, j, l] += [D[g, 2*t], D[g, 2*t+1], D[g+8, 2*t], D[g+8, 2*t+1]]
        for i in range(MT):
            for j in range(NTL):
                for l in range(32):
                    g, t4 = l >> 2, l & 3
                    for h in range(2):
                        r = wm*WM + i*16 + g + h*8; c = wn*WN + j*8 + t4*2
                        C[r, c] = acc[i, j, l, 2*h]; C[r, c+1] = acc[i, j, l, 2*h+1]
    ref = A @ Bkn
    assert np.array_equal(C, ref), np.argwhere(C != ref)[:5]
    print("ok", BM, BN, BK, WM, WN, "nt" if BT else "nn")


def run_simt(BT, M, N, K, m0=0, n0=0):
    BM=BN=128; BK=8; NT=256
    rng=np.random.default_rng(1)
    A=rng.standard_normal((M,K)); Bkn=rng.standard_normal((K,N)); Bg=Bkn.T.copy() if BT else Bkn
    As=np.full((2,BK,BM+4),np.nan); Bs=np.full((2,BK,BN+4),np.nan)
    def fetch(tid,k0):
        ar=tid>>1; aq=(tid&1)*4; bk=tid>>5; bq=(tid&31)*4
        ra=[0.0]*4; rb=[0.0]*4
        for e in range(4):
            k=k0+aq+e
            ra[e]=A[m0+ar,k] if (m0+ar<M and k<K) else 0.0
            if BT: rb[e]=Bg[n0+ar,k] if (n0+ar<N and k<K) else 0.0
            else: rb[e]=Bg[k0+bk,n0+bq+e] if (k0+bk<K and n0+bq+e<N) else 0.0
        return ra,rb
    def stash(tid,buf,ra,rb):
        ar=tid>>1; aq=(tid&1)*4; bk=tid>>5; bq=(tid&31)*4
        for e in range(4):
            As[buf,aq+e,ar]=ra[e]
            if BT: Bs[buf,aq+e,ar]=rb[e]
            else: Bs[buf,bk,bq+e]=rb[e]
    acc=np.zeros((NT,8,8))
    KT=(K+BK-1)//BK
    regs=[fetch(t,0) for t in range(NT)]
    for t in range(NT): stash(t,0,*regs[t])
    assert not np.isnan(As[0,:,:BM]).any() and not np.isnan(Bs[0,:,:BN]).any()
    for kt in range(KT):
        buf=kt&1
        if kt+1<KT: regs=[fetch(t,(kt+1)*BK) for t in range(NT)]
        for t in range(NT):
            tx=t&15; ty=t>>4
            for k in range(BK):
                a=list(As[buf,k,ty*4:ty*4+4])+list(As[buf,k,64+ty*4:64+ty*4+4])
                b=list(Bs[buf,k,tx*4:tx*4+4])+list(Bs[buf,k,64+tx*4:64+tx*4+4])
                acc[t]+=np.outer(a,b)
        if kt+1<KT:
            for t in range(NT): stash(t,buf^1,*regs[t])
    C=np.full((M,N),np.nan)
    for t in range(NT):
        tx=t&15; ty=t>>4
        for i in range(8):
            r=m0+(ty*4+i if i<4 else 64+ty*4+i-4)
            if r>=M: continue
            for j in range(8):
                c=n0+(tx*4+j if j<4 else 64+tx*4+j-4)
                if c<N: C[r,c]=acc[t,i,j]
    ref=(A@Bkn)[m0:m0+128,n0:n0+128]
    got=C[m0:m0+128,n0:n0+128]
    assert np.allclose(got,ref), np.nanmax(abs(got-ref))
    print("ok BT=%d M=%d N=%d K=%d"%(BT,M,N,K))

if __name__ == "__main__":
    for cfg in [(128, 256, 32, 64, 64), (256, 128, 32, 64, 64), (128, 128, 32, 64, 64), (128, 128, 64, 64, 64),
                (64, 64, 32, 32, 32)]:
        for bt in (False, True):
            run(*cfg, bt)
    for BT in (0, 1):
        run_simt(BT, 128, 128, 16)
        run_simt(BT, 77, 50, 33)
        run_simt(BT, 200, 300, 20, m0=128, n0=128)
