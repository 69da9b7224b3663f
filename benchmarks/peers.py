"""The peers' published lower bounds on the suite (claimed epsilon 0.1, 90 %).

DP-Sniper (Bichsel et al., S&P 2021): ``eps_lcb`` of
``eth-sri/dp-sniper/eval_sp2021/reference-results/dd_search_reg_data.log`` and
``dd_search_mlp_data.log``, the values its ``eval_sp2021/plots/create_plots.py``
draws in the paper's comparison plot; 1.07e7 draws each for training, threshold
selection and checking, 2e8 for the final bound; events of probability about
c = 0.01 under the second input, so no bound exceeds ln(1/c) = 4.6. DP-Sniper ran
the float Laplace (``LaplaceMechanism``, mcdp's ``laplace-float``) and the snapping
mechanism (``LaplaceFixed``, mcdp's ``snapping``) only with its neural network on
the 64 bits of each output (``eval_sp2021/reference-results/floating_point_data.log``
and ``floating_fixed_data.log``, ``eps_lcb``): their logistic-regression entry is
``nan`` (no such run).

StatDP (Ding et al., CCS 2018) publishes p-values, not bounds: the values here are
DP-Sniper's "StatDP-Fixed", StatDP's counterexamples re-estimated on 2e8 draws at
90 % (``statdp_result.eps_lcb`` of ``statdp_1_data.log`` and ``statdp_2_data.log``,
two runs).

Delta-Siege (Lokna et al., CCS 2023) and DP-Auditorium (Kong et al., 2024) do not
report bounds on this suite.
"""

import math

# mcdp name -> (logistic regression, neural network)
DP_SNIPER = {
    "noisy-hist1": (0.097794, 0.097699),
    "noisy-hist2": (4.602022, 4.601470),
    "report-noisy-max1": (0.092254, 0.092501),
    "report-noisy-max2": (0.097503, 0.097920),
    "report-noisy-max3": (0.247816, 0.248810),
    "report-noisy-max4": (0.346343, 0.353444),
    "svt1": (0.085798, 0.085782),
    "svt2": (0.085934, 0.085247),
    "svt3": (0.171572, 0.182168),
    "svt4": (0.168683, 0.169569),
    "svt5": (1.761185, 1.760988),
    "svt6": (0.272041, 0.269827),
    "svt34-parallel": (0.261038, 0.261621),
    "prefix-sum": (0.504012, 0.577433),
    "truncated-geometric": (0.115564, 0.115543),
    "laplace-parallel": (0.034953, 0.029869),
    "rappor": (0.292985, 0.300802),
    "one-time-rappor": (0.597778, 0.599899),
    "numerical-svt": (0.034324, 0.034501),
    "laplace-float": (math.nan, 0.252075),
    "snapping": (math.nan, 0.097876),
}

# mcdp name -> (run 1, run 2)
STATDP = {
    "noisy-hist1": (0.082831, 0.099436),
    "noisy-hist2": (9.716927, 10.002169),
    "report-noisy-max1": (0.091952, 0.092102),
    "report-noisy-max2": (0.099575, 0.099672),
    "report-noisy-max3": (0.199142, 0.196071),
    "report-noisy-max4": (0.196020, 0.198830),
    "svt1": (0.029754, 0.029846),
    "svt2": (0.031642, 0.040683),
    "svt3": (0.023061, 0.179285),
    "svt4": (0.170860, 0.171908),
    "svt5": (14.314309, 14.314307),
    "svt6": (0.322037, 0.319954),
    "svt34-parallel": (0.137089, 0.196324),
    "prefix-sum": (0.351606, 0.344593),
    "truncated-geometric": (0.115881, 0.116854),
    "laplace-parallel": (0.012593, 0.013493),
}
