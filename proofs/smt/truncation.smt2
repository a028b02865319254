; verispec certificate: truncation
; obligation: truncation: A committed block is cut after its first EOS and at the remaining token budget, and nothing allowed is dropped.
; convention: cut after the first EOS, then at the budget (sgl-project/sglang #31599 (stop ids before the budget); docs/explanation/index-conventions.md#stops-and-budgets)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun block_len () Int)
(declare-fun eos_index () Int)
(declare-fun budget () Int)
(define-fun t1 () Int (+ eos_index 1))
(define-fun t2 () Int (ite (<= t1 budget) t1 budget))
(define-fun t3 () Int (ite (<= block_len t1) block_len t1))
(assert (>= block_len 1))
(assert (>= eos_index 0))
(assert (<= eos_index block_len))
(assert (>= budget 1))
(assert (not (= (ite (<= block_len t2) block_len t2) (ite (<= t3 budget) t3 budget))))
(check-sat)
