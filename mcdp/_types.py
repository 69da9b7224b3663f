"""Type aliases shared across mcdp."""

import jax
import jax.typing

Array = jax.Array
PRNGKey = jax.Array
ArrayLike = jax.typing.ArrayLike
