// harvestflow sample site script
document.documentElement.className = "js";
