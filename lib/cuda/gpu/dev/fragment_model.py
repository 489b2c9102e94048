# lib/cuda/dev/fragment_model.py: a NumPy model of flash_mma.cu's register and shared-memory
# addressing, for checking index arithmetic on a machine without a GPU.
#
# It plays one block of flash_mma_kernel lane by lane: the same stage_rows / ldmatrix
# addresses and the same C -> A register reuse, with mma.sync and ldmatrix replaced by
# their PTX-documented fragment layouts (m16n8k16; m8n8.x4 with and without .trans),
# in float64 and without 16-bit rounding. It must print max|diff| ~1e-15 for every
# case. It models the kernel, it is not the kernel: change both together.
#
#   /usr/bin/python3 lib/cuda/dev/fragment_model.py   (needs numpy)
import numpy as np
rng = np.random.default_rng(0)

def mma(d_frags, a_frags, b_frags):
    # d_frags[lane] = 4 floats, a_frags[lane] = 8 values (a0..a7), b_frags[lane] = 4 values (b0..b3)
    A = np.zeros((16, 16)); Bm = np.zeros((16, 8)); C = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        a = a_frags[lane]
        for i in range(8):
            row = g if (i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            A[row, col] = a[i]
        b = b_frags[lane]
        for i in range(4):
            Bm[t * 2 + (i & 1) + (8 if i >= 2 else 0), g] = b[i]
        c = d_frags[lane]
        for i in range(4):
            C[g + (8 if i >= 2 else 0), t * 2 + (i & 1)] = c[i]
    D = A @ Bm + C
    out = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        out.append([D[g + (8 if i >= 2 else 0), t * 2 + (i & 1)] for i in range(4)])
    return out

def ldmatrix_x4(buf, addrs, trans):
    # addrs[lane] = element index of row lane%8 of matrix lane//8
    regs = [[None]*4 for _ in range(32)]
    for mi in range(4):
        M = np.array([[buf[addrs[mi*8 + r] + c] for c in range(8)] for r in range(8)])
        if trans: M = M.T
        for lane in range(32):
            regs[lane][mi] = [M[lane // 4, 2 * (lane % 4)], M[lane // 4, 2 * (lane % 4) + 1]]
    return regs

def ld32(buf, idx):  # two consecutive 16-bit values
    return [buf[idx], buf[idx + 1]]

def run(D, Tq, Tk, Dk, Dv, causal):
    BR = BC = 64; LDK = D + 8; LDV = BC + 8
    q = rng.standard_normal((Tq, Dk)); k = rng.standard_normal((Tk, Dk)); v = rng.standard_normal((Tk, Dv))
    scale = 1 / np.sqrt(Dk)
    out = np.full((Tq, Dv), np.nan)
    nqb = (Tq + BR - 1) // BR
    for bx in range(nqb):
        q_lo = (nqb - 1 - bx) * BR
        Ks = np.zeros(BC * LDK); Vt = np.zeros(D * LDV)
        # stage_rows (elementwise semantics)
        for r in range(BR):
            for c in range(D):
                Ks[r * LDK + c] = q[q_lo + r, c] if (q_lo + r < Tq and c < Dk) else 0
        for warp in range(4):
            qa = []
            for ks in range(D // 16):
                fr = []
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    p = (warp * 16 + g) * LDK + ks * 16 + 2 * t
                    fr.append(ld32(Ks, p) + ld32(Ks, p + 8 * LDK) + ld32(Ks, p + 8) + ld32(Ks, p + 8 * LDK + 8))
                qa.append(fr)
            # keep per-warp state
            if warp == 0: states = []
            states.append(dict(qa=qa, o=[[[0.0]*4 for _ in range(32)] for _ in range(D // 8)],
                               m0=[-np.inf]*32, m1=[-np.inf]*32, l0=[0.0]*32, l1=[0.0]*32))
        q_hi = min(q_lo + BR - 1, Tq - 1)
        k_end = min(Tk, q_hi + 1) if causal else Tk
        for k0 in range(0, k_end, BC):
            Ks[:] = 0; Vt[:] = 0
            for r in range(BC):
                for c in range(D):
                    Ks[r * LDK + c] = k[k0 + r, c] if (k0 + r < Tk and c < Dk) else 0
            Vs = np.zeros(BC * LDK)
            for r in range(BC):
                for c in range(D):
                    Vs[r * LDK + c] = v[k0 + r, c] if (k0 + r < Tk and c < Dv) else 0
            for warp in range(4):
                st = states[warp]
                s = [[[0.0]*4 for _ in range(32)] for _ in range(BC // 8)]
                for ks in range(D // 16):
                    for nt in range(0, BC // 8, 2):
                        addrs = [((nt + ((l // 8) >> 1)) * 8 + l % 8) * LDK + ks * 16 + ((l // 8) & 1) * 8 for l in range(32)]
                        kb = ldmatrix_x4(Ks, addrs, False)
                        s[nt] = mma(s[nt], st['qa'][ks], [kb[l][0] + kb[l][1] for l in range(32)])
                        s[nt + 1] = mma(s[nt + 1], st['qa'][ks], [kb[l][2] + kb[l][3] for l in range(32)])
                # scale + mask
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    i0 = q_lo + warp * 16 + g; i1 = i0 + 8
                    for nt in range(BC // 8):
                        for e in range(4):
                            j = k0 + nt * 8 + 2 * t + (e & 1)
                            row = i0 if e < 2 else i1
                            x = s[nt][lane][e] * scale
                            if j >= Tk or (causal and j > row): x = -np.inf
                            s[nt][lane][e] = x
                # online softmax (quad max)
                mx0 = [max(max(s[nt][l][0], s[nt][l][1]) for nt in range(BC // 8)) for l in range(32)]
                mx1 = [max(max(s[nt][l][2], s[nt][l][3]) for nt in range(BC // 8)) for l in range(32)]
                for off in (1, 2):
                    mx0 = [max(mx0[l], mx0[l ^ off]) for l in range(32)]
                    mx1 = [max(mx1[l], mx1[l ^ off]) for l in range(32)]
                for l in range(32):
                    mn0 = max(st['m0'][l], mx0[l]); mn1 = max(st['m1'][l], mx1[l])
                    u0 = 0 if mn0 == -np.inf else mn0; u1 = 0 if mn1 == -np.inf else mn1
                    a0 = np.exp(st['m0'][l] - u0); a1 = np.exp(st['m1'][l] - u1)
                    st['m0'][l] = mn0; st['m1'][l] = mn1
                    st['l0'][l] *= a0; st['l1'][l] *= a1
                    for nt in range(D // 8):
                        st['o'][nt][l] = [st['o'][nt][l][0]*a0, st['o'][nt][l][1]*a0, st['o'][nt][l][2]*a1, st['o'][nt][l][3]*a1]
                    for nt in range(BC // 8):
                        for e in range(4):
                            p = np.exp(s[nt][l][e] - (u0 if e < 2 else u1))
                            if e < 2: st['l0'][l] += p
                            else: st['l1'][l] += p
                            s[nt][l][e] = p
                for kk in range(BC // 16):
                    pa = [s[2*kk][l][0:2] + s[2*kk][l][2:4] + s[2*kk+1][l][0:2] + s[2*kk+1][l][2:4] for l in range(32)]
                    for nt in range(0, D // 8, 2):
                        addrs = [(kk * 16 + ((l // 8) & 1) * 8 + l % 8) * LDK + (nt + ((l // 8) >> 1)) * 8 for l in range(32)]
                        vb = ldmatrix_x4(Vs, addrs, True)
                        st['o'][nt] = mma(st['o'][nt], pa, [vb[l][0] + vb[l][1] for l in range(32)])
                        st['o'][nt + 1] = mma(st['o'][nt + 1], pa, [vb[l][2] + vb[l][3] for l in range(32)])
        for warp in range(4):
            st = states[warp]
            l0 = st['l0'][:]; l1 = st['l1'][:]
            for off in (1, 2):
                l0 = [l0[l] + l0[l ^ off] for l in range(32)]; l1 = [l1[l] + l1[l ^ off] for l in range(32)]
            for l in range(32):
                g, t = l // 4, l % 4
                i0 = q_lo + warp * 16 + g; i1 = i0 + 8
                inv0 = 1 / l0[l] if l0[l] > 0 else 0; inv1 = 1 / l1[l] if l1[l] > 0 else 0
                for nt in range(D // 8):
                    c = nt * 8 + 2 * t
                    for (row, inv, e0) in ((i0, inv0, 0), (i1, inv1, 2)):
                        if row < Tq:
                            if c < Dv: out[row, c] = st['o'][nt][l][e0] * inv
                            if c + 1 < Dv: out[row, c + 1] = st['o'][nt][l][e0 + 1] * inv
    # reference
    S = q @ k.T * scale
    if causal:
        S = np.where(np.arange(Tk)[None, :] > np.arange(Tq)[:, None], -np.inf, S)
    mx = S.max(1, keepdims=True); mxs = np.where(np.isinf(mx), 0, mx)
    P = np.exp(S - mxs); sm = P.sum(1, keepdims=True)
    W = np.where(sm > 0, P / np.where(sm > 0, sm, 1), 0)
    ref = W @ v
    err = np.nanmax(np.abs(out - ref))
    print(f"D={D} Tq={Tq} Tk={Tk} Dk={Dk} Dv={Dv} causal={causal}: max|diff| = {err:.3g}, unwritten={np.isnan(out).sum()}")
    assert err < 1e-9 and not np.isnan(out).any(), "the model disagrees with the reference"

run(32, 70, 90, 20, 24, True)
run(64, 64, 130, 64, 48, False)
run(128, 65, 70, 100, 128, True)
