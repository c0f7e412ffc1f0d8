/* repromatrix stand-in: the current CUDA device is 0 (no driver is asked). */
int cudaGetDevice(int *device) { *device = 0; return 0; }
