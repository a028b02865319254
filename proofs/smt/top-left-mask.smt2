; verispec certificate: top-left-mask
; obligation: visibility: In a verify pass (gamma+1 queries, L+gamma keys, contiguous cache) query row r sees key j exactly when j's position is at most the query's position L-1+r.
; convention: top-left causal: key <= row (PyTorch SDPA is_causal on non-square inputs; FlashAttention < 2.1)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun row () Int)
(declare-fun key () Int)
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= row 0))
(assert (<= row gamma))
(assert (>= key 0))
(assert (< key (+ L gamma)))
(assert (not (= (<= key row) (<= key (+ (- L 1) row)))))
(check-sat)
