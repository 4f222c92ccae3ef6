/*
 * MPI_Dims_create: split what the preset entries leave of nnodes over the
 * free entries, as balanced as possible, non-increasing.
 *
 * Programs cut their domains with this answer, so a job must get the same
 * grid whichever MPI it runs on: the rules below give MPICH's answers
 * (tests/diff/diff_dims.c compares tens of thousands of inputs with
 * Debian's MPICH), and they cost microseconds for common sizes, not a
 * search over every factorisation.  In order:
 *
 *  1. Factor m (what is left) into primes.  A prime with exponent one whose
 *     square exceeds what remains is taken out whole, from the largest down
 *     (never the smallest distinct prime), while more than one slot is left:
 *     no balanced grid can split it.
 *  2. Easy shapes end here: no more primes (with multiplicity) than slots
 *     (the primes in decreasing order, then ones); one slot (all of it);
 *     a power of one prime (the exponent dealt out, the first slots one
 *     factor more); every exponent a multiple of the slot count (equal
 *     slots).
 *  3. Otherwise a first guess deals the primes out, largest first: one to
 *     each slot, then each to the last slot it fits without passing the
 *     slot before it (or to the first).  Its spread (largest minus
 *     smallest, the taken-out primes counting as largest) bounds a search
 *     that fills slots from the smallest up with divisors of what is left,
 *     each at least the one before; the last two slots are the divisor
 *     pair closest to the square root.  A candidate at least as good as
 *     the best so far replaces it (later wins a tie), and a candidate's
 *     spread is measured from the smallest slot to the largest (the
 *     taken-out primes not counted).  Subtrees that cannot beat the best
 *     spread are skipped; that changes the time, never the answer.
 */
#include "runtime/topo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct primes {
    int n;          /* distinct primes, increasing */
    int p[32], e[32];
    int total;      /* primes counted with multiplicity */
};

static void factorise(int m, struct primes *f)
{
    f->n = f->total = 0;
    for (int64_t d = 2; d * d <= m; d += d == 2 ? 1 : 2) {
        if (m % d != 0)
            continue;
        int e = 0;
        while (m % d == 0) {
            m /= (int)d;
            e++;
        }
        f->p[f->n] = (int)d;
        f->e[f->n++] = e;
        f->total += e;
    }
    if (m > 1) {
        f->p[f->n] = m;
        f->e[f->n++] = 1;
        f->total++;
    }
}

/* The divisors of m other than 1 and m, increasing; returns how many.
 * out and tmp have room for ndiv (all divisors) and 2 * ndiv ints.  They
 * come out sorted: for each prime p, the divisors so far times p^k
 * (k = 1..e) are merged in one power at a time. */
static int divisors(const struct primes *f, int ndiv, int *out, int *tmp)
{
    int n = 1;
    out[0] = 1;
    for (int i = 0; i < f->n; i++) {
        int had = n, *base = tmp + ndiv, *merged = tmp;
        memcpy(base, out, sizeof(int) * (size_t)had);
        int64_t pw = 1;
        for (int k = 0; k < f->e[i]; k++) {
            pw *= f->p[i];
            int a = 0, b = 0, t = 0;
            while (a < n || b < had) {
                int64_t vb = b < had ? base[b] * pw : INT64_MAX;
                if (a < n && out[a] < vb)
                    merged[t++] = out[a++];
                else
                    merged[t++] = (int)vb, b++;
            }
            memcpy(out, merged, sizeof(int) * (size_t)t);
            n = t;
        }
    }
    memmove(out, out + 1, sizeof(int) * (size_t)(n - 2));
    return n - 2;
}

struct balance {
    int nd;         /* slots searched */
    int *slot;      /* slot[nd-1] is the smallest, filled first */
    int *best;      /* the answer so far, largest first */
    int64_t spread; /* its spread */
};

/* Is f^k <= q for the k slots still to fill after this one (k >= 2)? */
static bool room_for(int64_t f, int k, int64_t q)
{
    int64_t v = f;
    for (int i = 1; i < k; i++) {
        v *= f;
        if (v > q)
            return false;
    }
    return true;
}

/* Fill slot idx (and those below it) with a divisor of n from cand[]. */
static void balance_fill(struct balance *b, int n, int idx, const int *cand, int ncand)
{
    int least = b->slot[b->nd - 1];
    /* Below the top, an answer from here is taken only if its largest slot
     * is at most least + spread; that slot is the largest of idx + 1 slots
     * whose product is n, so when (least + spread)^(idx+1) < n nothing
     * here can be taken: skipping it changes nothing but the time. */
    int64_t cap = (int64_t)least + b->spread;
    if (idx < b->nd - 1 && (cap < 1 || room_for(cap, idx + 1, (int64_t)n - 1)))
        return;
    if (idx == 1) {
        /* the last two: the largest candidate f with f <= n / f (scanning
         * from the second; the first if none) and its cofactor */
        int k = 1;
        while (k < ncand && n / cand[k] >= cand[k])
            k++;
        int f = cand[k - 1], q = n / f;
        if (q < f)
            return;
        int64_t test = b->nd == 2 ? q - f : q - least;
        if (test <= b->spread) {
            for (int i = 2; i < b->nd; i++)
                b->best[i] = b->slot[i];
            b->best[0] = q;
            b->best[1] = f;
            b->spread = q - least;
        }
        return;
    }
    int next[ncand > 0 ? ncand : 1];
    bool top = idx == b->nd - 1;
    for (int k = 0; k < ncand; k++) {
        int f = cand[k];
        if (!top && f - least > b->spread)
            break;  /* every later slot is at least f */
        int q = n / f, nnext = 0, smallest;
        if (q % f == 0) {
            next[nnext++] = f;
            smallest = f;
        } else if (k + 1 < ncand) {
            smallest = cand[k + 1];
        } else {
            break;
        }
        if (!top && smallest - least > b->spread)
            break;
        if (!room_for(smallest, idx, q))
            break;
        b->slot[idx] = f;
        for (int kk = k + 1; kk < ncand && (int64_t)cand[kk] * cand[kk] <= q; kk++)
            if (q % cand[kk] == 0)
                next[nnext++] = cand[kk];
        if (nnext > 0)
            balance_fill(b, q, idx - 1, next, nnext);
    }
}

/* Step 3 for r >= 2 slots of m, which has at least two distinct primes;
 * lead is the largest prime taken out in step 1 (0 if none). */
static void balance_search(const struct primes *f, int m, int r, int lead, int *out)
{
    /* the first guess */
    for (int i = 0; i < r; i++)
        out[i] = 1;
    int dealt = 0;
    for (int i = f->n - 1; i >= 0; i--)
        for (int k = 0; k < f->e[i]; k++) {
            int p = f->p[i];
            if (dealt < r) {
                out[dealt++] = p;
                continue;
            }
            int at = r - 1;
            while (at > 0 && (int64_t)out[at] * p > out[at - 1])
                at--;
            out[at] *= p;
        }
    int ndiv = 1;
    for (int i = 0; i < f->n; i++)
        ndiv *= f->e[i] + 1;
    int *divs = malloc(sizeof(int) * 3 * (size_t)ndiv);
    if (divs == NULL)
        return;  /* out of memory: the first guess is still a valid grid */
    int slot[r];
    int nd = divisors(f, ndiv, divs, divs + ndiv);
    struct balance b = {.nd = r, .slot = slot, .best = out,
                        .spread = (int64_t)(lead ? lead : out[0]) - out[r - 1]};
    slot[r - 1] = divs[0];
    balance_fill(&b, m, r - 1, divs, nd);
    free(divs);
}

/* The free slots' values, largest first, for m over nfree >= 2 slots. */
static void dims_split(int m, int nfree, int *out)
{
    struct primes f;
    factorise(m, &f);
    int taken = 0;
    for (int j = f.n - 1; j > 0 && taken < nfree - 1; j--) {
        if (f.e[j] != 1 || (int64_t)f.p[j] * f.p[j] <= m)
            break;
        out[taken++] = f.p[j];
        m /= f.p[j];
        f.n--;
        f.total--;
    }
    int r = nfree - taken;
    int *s = out + taken;
    if (f.total <= r) {
        int k = 0;
        for (int i = f.n - 1; i >= 0; i--)
            for (int e = 0; e < f.e[i]; e++)
                s[k++] = f.p[i];
        while (k < r)
            s[k++] = 1;
        return;
    }
    if (r == 1) {
        s[0] = m;
        return;
    }
    if (f.n == 1) {
        for (int i = 0; i < r; i++)
            s[i] = 1;
        for (int e = 0; e < f.e[0]; e++)
            s[e % r] *= f.p[0];
        return;
    }
    bool even = true;
    for (int i = 0; i < f.n; i++)
        even = even && f.e[i] % r == 0;
    if (even) {
        int v = 1;
        for (int i = 0; i < f.n; i++)
            for (int e = 0; e < f.e[i] / r; e++)
                v *= f.p[i];
        for (int i = 0; i < r; i++)
            s[i] = v;
        return;
    }
    balance_search(&f, m, r, taken ? out[0] : 0, s);
}

bool cdn_dims_create(int nnodes, int ndims, int *dims)
{
    int64_t fixed = 1;
    int nfree = 0;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] > 0 && fixed <= nnodes)
            fixed *= dims[i];
        else if (dims[i] <= 0)
            nfree++;
    }
    if (fixed > nnodes || nnodes % fixed != 0)
        return false;
    if (nfree == 0)
        return true;  /* MPI asks only that the preset entries divide nnodes */
    int f[nfree];
    int m = (int)(nnodes / fixed);
    if (nfree == 1)
        f[0] = m;
    else
        dims_split(m, nfree, f);
    for (int i = 0, k = 0; i < ndims; i++)
        if (dims[i] <= 0)
            dims[i] = f[k++];
    return true;
}
