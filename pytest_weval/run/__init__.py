"""Running items: one item's evaluation (``pipeline``), the pass/fail decision (``outcome``)
and the scheduling of a run's items across processes (``schedule``).

Above the transport (``pytest_weval.engine``), below pytest (``pytest_weval.plugin``): this
package calls the engine, the judges and the scoring functions, and imports no pytest.
"""
